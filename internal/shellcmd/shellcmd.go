// Package shellcmd builds the kubectl and helm commands unstick prints for a person to paste.
// Every value a command names comes from a cluster or a bundle, which is untrusted input: a
// Helm record can name its release `app$(curl …|sh)`. Each value is therefore checked
// against the rule of what it is (a Kubernetes name, a Helm release name, a number, an
// image) and shell-quoted where it needs it; a value that fails its rule is never put into
// the command, which is replaced by a comment line saying why (Withheld).
package shellcmd

import (
	"fmt"
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/textsafe"
)

// withheldPrefix starts the line that stands in for a withheld command: a shell comment, so
// the line does nothing when pasted.
const withheldPrefix = "# command withheld: "

// Withheld is the line printed instead of a command a value of which failed its rule.
func Withheld(err error) string { return withheldPrefix + textsafe.Line(err.Error()) }

// IsWithheld reports whether cmd is a Withheld line rather than a command.
func IsWithheld(cmd string) bool { return strings.HasPrefix(cmd, withheldPrefix) }

// Quote quotes s for a POSIX shell when it holds anything but letters, digits and
// @ % + = : , . / _ - (what names, paths and URLs usually hold), with single quotes, inside
// which the shell reads nothing; a single quote in s is written '\”.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !plain(r) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

func plain(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)
}

// displayMax is how much of an invalid value a message shows.
const displayMax = 48

// Display shows a value in a message: control characters removed, line breaks shown as ⏎,
// cut to a few dozen characters and single-quoted, so that the message is one line and
// nothing in it runs if it is pasted.
func Display(v string) string {
	return Quote(textsafe.ClipRunes(textsafe.Line(v), displayMax))
}

// Arg is one value of a command: checked against its kind when the command is built.
type Arg struct {
	kind  Kind
	what  string
	value string
	// text is a part built by this package (a program with its connection flags, a
	// placeholder); outside says it must stand outside quotes.
	text    string
	outside bool
	err     error
}

// Value is v as a value of kind k; what names it in the message when it fails ("release
// name"); empty means the kind's own name.
func Value(k Kind, what, v string) Arg { return Arg{kind: k, what: what, value: v} }

// placeholderName is how a placeholder a person fills in is named: <verified-image>.
var placeholderName = lazyre.New(`^[a-z][a-z0-9-]*$`)

// Placeholder is <name>, printed as it is for the person to fill in (the step says what it
// stands for).
func Placeholder(name string) Arg {
	if !placeholderName().MatchString(name) {
		return Arg{err: &Invalid{What: "placeholder", Kind: Word, Value: name, Reason: "want lower-case letters, digits and '-'"}}
	}
	return Arg{text: "<" + name + ">"}
}

// Int is a non-negative number.
func Int[T int | int64](n T) Arg { return Arg{kind: Integer, value: intString(int64(n))} }

// Sprintf builds a command from a format whose every verb is %s, one per argument, putting
// each value where its verb stands: quoted when it stands outside quotes, as it is when the
// format quotes it (a JSON patch in single quotes) and it can hold no quote. A value that
// fails its kind's rule, or cannot stand where it is, withholds the whole command.
func Sprintf(format string, args ...Arg) string {
	parts := strings.Split(format, "%s")
	if len(parts)-1 != len(args) {
		return Withheld(fmt.Errorf("a command was given %d values for %d places", len(args), len(parts)-1))
	}
	var b, tmpl strings.Builder
	for i, a := range args {
		b.WriteString(parts[i])
		tmpl.WriteString(parts[i])
		s, err := a.embed(quotingAfter(tmpl.String()))
		if err != nil {
			return Withheld(err)
		}
		b.WriteString(s)
	}
	b.WriteString(parts[len(parts)-1])
	return b.String()
}

func (a Arg) embed(q quoting) (string, error) {
	if a.err != nil {
		return "", a.err
	}
	if a.text != "" {
		if a.outside && q != bare {
			return "", &Invalid{What: "command part", Kind: Word, Value: a.text, Reason: "it cannot stand inside quotes"}
		}
		return a.text, nil
	}
	return embed(a.kind, a.what, a.value, q)
}

// embed checks v as a value of kind k and writes it as it must stand where the quoting is q.
func embed(k Kind, what, v string, q quoting) (string, error) {
	if err := Check(k, v); err != nil {
		err.(*Invalid).What = what
		return "", err
	}
	switch q {
	case single:
		if strings.ContainsAny(v, `'"\`) {
			return "", &Invalid{What: what, Kind: k, Value: v, Reason: "it holds a quote or backslash, and the command quotes it"}
		}
		return v, nil
	case double:
		if Quote(v) != v {
			return "", &Invalid{What: what, Kind: k, Value: v, Reason: "it holds characters a double-quoted word would expand"}
		}
		return v, nil
	}
	return Quote(v), nil
}

// quoting is the shell's quoting state at a point of a command.
type quoting int

const (
	bare quoting = iota
	single
	double
)

// quotingAfter is the quoting state at the end of prefix: inside single quotes, inside
// double quotes, or outside both (a backslash outside single quotes escapes the next byte).
func quotingAfter(prefix string) quoting {
	q := bare
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		switch {
		case q == single:
			if c == '\'' {
				q = bare
			}
		case c == '\\':
			i++
		case q == double:
			if c == '"' {
				q = bare
			}
		case c == '\'':
			q = single
		case c == '"':
			q = double
		}
	}
	return q
}

// Fill replaces each <name> of template for which lookup has a value, checked and placed as
// Sprintf places its values, in one pass: replaced text is not read again, and a <name>
// lookup does not know stays as it is. The first value that fails its rule is returned as
// the error; the caller prints Withheld(err) instead of the command.
func Fill(template string, lookup func(name string) (Arg, bool)) (string, error) {
	var b strings.Builder
	done := 0 // template[:done] is in b
	for i := 0; i < len(template); {
		k := strings.IndexByte(template[i:], '<')
		if k < 0 {
			break
		}
		open := i + k
		e := strings.IndexByte(template[open+1:], '>')
		if e < 0 {
			break
		}
		end := open + 1 + e
		a, ok := lookup(template[open+1 : end])
		if !ok {
			i = open + 1
			continue
		}
		s, err := a.embed(quotingAfter(template[:open]))
		if err != nil {
			return "", err
		}
		b.WriteString(template[done:open])
		b.WriteString(s)
		done, i = end+1, end+1
	}
	if done == 0 {
		return template, nil
	}
	b.WriteString(template[done:])
	return b.String(), nil
}
