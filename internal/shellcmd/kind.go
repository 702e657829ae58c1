package shellcmd

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/textsafe"
)

// Kind is what a value put into a command must be. Each kind has the rule of the program
// that defines it; a value that breaks the rule is never interpolated.
type Kind int

const (
	// Name is a Kubernetes object name: an RFC 1123 subdomain (most kinds' names).
	Name Kind = iota
	// Namespace is a Kubernetes namespace: an RFC 1123 label.
	Namespace
	// DNSLabel is an RFC 1123 label: a container's name, a resource's plural, an API version.
	DNSLabel
	// Release is a Helm release name (helm's chartutil.ValidateReleaseName).
	Release
	// Integer is a non-negative decimal number: a revision, a generation, seconds.
	Integer
	// LabelKey is a Kubernetes label key (an optional DNS prefix, '/', a name).
	LabelKey
	// LabelValue is a Kubernetes label value.
	LabelValue
	// Image is a container image reference.
	Image
	// GroupVersion is an apiVersion: "v1" or "<group>/<version>".
	GroupVersion
	// Word is any other short value a command names (a chart version, a file path, a
	// Kubernetes version): letters, digits and . _ / : @ + = , ~ -, not starting with '-'.
	Word
	// Text is a value only the user's own configuration defines — a kubeconfig context, a
	// kubeconfig path, an API server URL: any printable text, always shell-quoted.
	Text
)

func (k Kind) String() string {
	switch k {
	case Name:
		return "object name"
	case Namespace:
		return "namespace"
	case DNSLabel:
		return "name"
	case Release:
		return "Helm release name"
	case Integer:
		return "number"
	case LabelKey:
		return "label key"
	case LabelValue:
		return "label value"
	case Image:
		return "image reference"
	case GroupVersion:
		return "apiVersion"
	}
	return "value"
}

// helmReleaseName is Helm's rule for release names (pkg/chartutil validate_name.go): at most
// 53 characters, so that the names Helm derives from it stay within Kubernetes' limits.
var (
	helmReleaseName = lazyre.New(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	wordPattern     = lazyre.New(`^[A-Za-z0-9._/:@+=,~][A-Za-z0-9._/:@+=,~-]*$`)
	integerPattern  = lazyre.New(`^(0|[1-9][0-9]{0,17})$`)
)

const helmReleaseMaxLen = 53

// Invalid is a value that was not put into a command, and why.
type Invalid struct {
	// What names the value ("release name", "namespace"); Kind's name when empty.
	What   string
	Kind   Kind
	Value  string
	Reason string
}

func (e *Invalid) Error() string {
	what := e.What
	if what == "" {
		what = e.Kind.String()
	}
	return fmt.Sprintf("%s %s is not a valid %s (%s)", what, Display(e.Value), e.Kind, e.Reason)
}

// Check validates v as a value of kind k.
func Check(k Kind, v string) error {
	if reason := problem(k, v); reason != "" {
		return &Invalid{Kind: k, Value: v, Reason: reason}
	}
	return nil
}

func problem(k Kind, v string) string {
	switch k {
	case Name:
		return first(content.IsDNS1123Subdomain(v))
	case Namespace, DNSLabel:
		return first(content.IsDNS1123Label(v))
	case Release:
		return releaseProblem(v)
	case Integer:
		return matchProblem(integerPattern(), v, "a decimal number")
	case LabelKey:
		return first(content.IsLabelKey(v))
	case LabelValue:
		return first(content.IsLabelValue(v))
	case Image:
		return imageProblem(v)
	case GroupVersion:
		return groupVersionProblem(v)
	case Word:
		return matchProblem(wordPattern(), v, "letters, digits and . _ / : @ + = , ~ -, not starting with '-'")
	case Text:
		return textProblem(v)
	}
	return "unknown kind of value"
}

func first(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	return errs[0]
}

func matchProblem(re *regexp.Regexp, v, want string) string {
	if re.MatchString(v) {
		return ""
	}
	return "want " + want
}

func releaseProblem(v string) string {
	if len(v) > helmReleaseMaxLen {
		return fmt.Sprintf("longer than Helm's %d characters", helmReleaseMaxLen)
	}
	return matchProblem(helmReleaseName(), v, "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit")
}

func imageProblem(v string) string {
	if v == "" || strings.TrimSpace(v) != v {
		return "empty or padded with spaces"
	}
	if _, err := imageref.Parse(v); err != nil {
		return err.Error()
	}
	if strings.ContainsAny(v, "[]") {
		return "a bracketed registry address is not printed into a command"
	}
	return ""
}

func groupVersionProblem(v string) string {
	group, version, ok := strings.Cut(v, "/")
	if !ok {
		return first(content.IsDNS1123Label(v))
	}
	if p := first(content.IsDNS1123Subdomain(group)); p != "" {
		return "group: " + p
	}
	return first(content.IsDNS1123Label(version))
}

func textProblem(v string) string {
	switch {
	case v == "":
		return "empty"
	case !utf8.ValidString(v):
		return "not valid UTF-8"
	case !textsafe.Safe(v) || strings.ContainsAny(v, "\n\t"):
		return "it holds control characters"
	}
	return ""
}

// intString is n as a command writes it.
func intString(n int64) string { return strconv.FormatInt(n, 10) }
