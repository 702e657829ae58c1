package snapshot

import (
	"errors"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/rancher/wrangler/v3/pkg/genericcondition"
)

// A fleet's BundleDeployments are most of what an offline scan of a management cluster
// reads (one per downstream cluster and bundle), so their Lists are read by hand, field by
// field on the tokens of the same decoder and options the reflection decode uses: what is
// valid JSON, how a null or a value of the wrong type decodes, and the labels and metadata
// are theirs (a value that is not the object or string expected is handed to the
// reflection decode as it stands). What the hand-written reader does not take on exactly —
// a field name that matches only ignoring case, or escaped; a field given twice — stops it
// (errQuirk), and the whole List is decoded again by reflection.

// errQuirk stops the hand-written decode at what only the reflection decode handles.
var errQuirk = errors.New("a field name given twice, escaped or in another case")

// decodeBundleDeployments decodes a List of BundleDeployments by hand, else by reflection.
func decodeBundleDeployments(apiVersion, kind string, data []byte, page bool, max int, strs *Strings) ([]*Object, string, bool, bool) {
	if strs != nil {
		r := bdReader{opts: decodeOptions(strs), strs: strs, apiVersion: apiVersion, kind: kind}
		objs, cont, ok, more := decodeListWith[BundleDeployment](apiVersion, kind, data, page, max, r.opts, r.item)
		if ok {
			return objs, cont, ok, more
		}
	}
	return decodeList[BundleDeployment](apiVersion, kind, data, page, max, strs)
}

// bdReader reads BundleDeployments from one List; strings go through strs.
type bdReader struct {
	opts             jsonv2.Options
	strs             *Strings
	apiVersion, kind string
}

// The JSON names of the fields of each struct read, in the order the readers number them.
var (
	bdFields        = [...]string{"apiVersion", "kind", "metadata", "spec", "status"}
	bdSpecFields    = [...]string{"deploymentID", "stagedDeploymentID", "paused", "offSchedule", "ociContents", "helmChartOptions", "options"}
	bdOptionsFields = [...]string{"helm", "namespace", "defaultNamespace"}
	bdHelmFields    = [...]string{"releaseName"}
	bdStatusFields  = [...]string{"conditions", "appliedDeploymentID", "ready", "nonModified", "nonReadyStatus", "modifiedStatus"}
	conditionFields = [...]string{"type", "status", "lastUpdateTime", "lastTransitionTime", "reason", "message"}
)

// object reads a JSON object into v, calling field for each member named in names (by its
// position) and skipping the others. Anything but an object is decoded into v by
// reflection (null leaves v as it is; another type is an error).
func (r *bdReader) object(dec *jsontext.Decoder, v any, names []string, field func(dec *jsontext.Decoder, i int) error) error {
	if dec.PeekKind() != '{' {
		return jsonv2.UnmarshalDecode(dec, v, r.opts)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	var seen uint64
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		i := memberIndex(name, names)
		switch {
		case i == quirkName:
			return errQuirk
		case i < 0:
			err = dec.SkipValue()
		case seen&(1<<i) != 0:
			return errQuirk
		default:
			seen |= 1 << i
			err = field(dec, i)
		}
		if err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// quirkName is memberIndex's answer for a name only the reflection decode matches rightly.
const quirkName = -2

// memberIndex is the position in names of a JSON object name (quoted, as read), -1 for a
// name that matches none, or quirkName for one that is escaped, not ASCII, or equal to one
// of names ignoring case, dashes and underscores (encoding/json matches those ignoring case).
func memberIndex(name jsontext.Value, names []string) int {
	raw := name[1 : len(name)-1]
	for i, n := range names {
		if string(raw) == n {
			return i
		}
	}
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			return quirkName
		}
	}
	for _, n := range names {
		if foldedEqual(raw, n) {
			return quirkName
		}
	}
	return -1
}

// foldedEqual compares ASCII a and b ignoring case, dashes and underscores.
func foldedEqual(a []byte, b string) bool {
	i, j := 0, 0
	for {
		for i < len(a) && (a[i] == '-' || a[i] == '_') {
			i++
		}
		for j < len(b) && (b[j] == '-' || b[j] == '_') {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		if lower(a[i]) != lower(b[j]) {
			return false
		}
		i, j = i+1, j+1
	}
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// item reads one BundleDeployment.
func (r *bdReader) item(dec *jsontext.Decoder, _ jsonv2.Options, bd *BundleDeployment) error {
	return r.object(dec, bd, bdFields[:], func(dec *jsontext.Decoder, i int) error {
		switch i {
		case 0:
			return r.known(dec, &bd.APIVersion, r.apiVersion)
		case 1:
			return r.known(dec, &bd.Kind, r.kind)
		case 2:
			if dec.PeekKind() != '{' {
				return jsonv2.UnmarshalDecode(dec, &bd.Meta, r.opts)
			}
			return readMeta(dec, &bd.Meta, r.strs)
		case 3:
			return r.spec(dec, &bd.Spec)
		}
		return r.status(dec, &bd.Status)
	})
}

// known reads a string that is most often want (the List's apiVersion or kind), sharing it.
func (r *bdReader) known(dec *jsontext.Decoder, s *string, want string) error {
	if dec.PeekKind() == '"' {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if string(v[1:len(v)-1]) == want {
			*s = want
			return nil
		}
		return jsonv2.Unmarshal(v, s, r.opts)
	}
	return readField(dec, s, r.strs)
}

func (r *bdReader) spec(dec *jsontext.Decoder, s *BundleDeploymentSpec) error {
	return r.object(dec, s, bdSpecFields[:], func(dec *jsontext.Decoder, i int) error {
		switch i {
		case 0:
			return readField(dec, &s.DeploymentID, r.strs)
		case 1:
			return readField(dec, &s.StagedDeploymentID, r.strs)
		case 2:
			return r.boolean(dec, &s.Paused)
		case 3:
			return r.boolean(dec, &s.OffSchedule)
		case 4:
			return r.boolean(dec, &s.OCIContents)
		case 5:
			return jsonv2.UnmarshalDecode(dec, &s.HelmChartOptions, r.opts)
		}
		return r.options(dec, &s.Options)
	})
}

func (r *bdReader) options(dec *jsontext.Decoder, o *BundleDeploymentOptions) error {
	return r.object(dec, o, bdOptionsFields[:], func(dec *jsontext.Decoder, i int) error {
		switch i {
		case 0:
			if dec.PeekKind() != '{' {
				return jsonv2.UnmarshalDecode(dec, &o.Helm, r.opts)
			}
			o.Helm = new(HelmOptions)
			return r.object(dec, o.Helm, bdHelmFields[:], func(dec *jsontext.Decoder, _ int) error {
				return readField(dec, &o.Helm.ReleaseName, r.strs)
			})
		case 1:
			return readField(dec, &o.Namespace, r.strs)
		}
		return readField(dec, &o.DefaultNamespace, r.strs)
	})
}

func (r *bdReader) status(dec *jsontext.Decoder, s *BundleDeploymentStatus) error {
	return r.object(dec, s, bdStatusFields[:], func(dec *jsontext.Decoder, i int) error {
		switch i {
		case 0:
			return r.conditions(dec, &s.Conditions)
		case 1:
			return readField(dec, &s.AppliedDeploymentID, r.strs)
		case 2:
			return r.boolean(dec, &s.Ready)
		case 3:
			return r.boolean(dec, &s.NonModified)
		case 4:
			return jsonv2.UnmarshalDecode(dec, &s.NonReadyStatus, r.opts)
		}
		return jsonv2.UnmarshalDecode(dec, &s.ModifiedStatus, r.opts)
	})
}

// conditions reads an array of conditions into the nil slice cs (an empty array makes an
// empty slice, as encoding/json does).
func (r *bdReader) conditions(dec *jsontext.Decoder, cs *[]genericcondition.GenericCondition) error {
	if dec.PeekKind() != '[' {
		return jsonv2.UnmarshalDecode(dec, cs, r.opts)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	out := make([]genericcondition.GenericCondition, 0, 4)
	for dec.PeekKind() != ']' {
		out = append(out, genericcondition.GenericCondition{})
		if err := r.condition(dec, &out[len(out)-1]); err != nil {
			return err
		}
	}
	*cs = out
	_, err := dec.ReadToken()
	return err
}

func (r *bdReader) condition(dec *jsontext.Decoder, c *genericcondition.GenericCondition) error {
	return r.object(dec, c, conditionFields[:], func(dec *jsontext.Decoder, i int) error {
		switch i {
		case 0:
			return readField(dec, &c.Type, r.strs)
		case 1:
			return readField(dec, &c.Status, r.strs)
		case 2:
			return readField(dec, &c.LastUpdateTime, r.strs)
		case 3:
			return readField(dec, &c.LastTransitionTime, r.strs)
		case 4:
			return readField(dec, &c.Reason, r.strs)
		}
		return readField(dec, &c.Message, r.strs)
	})
}

// boolean reads true or false; anything else is decoded by reflection.
func (r *bdReader) boolean(dec *jsontext.Decoder, b *bool) error {
	if k := dec.PeekKind(); k != 't' && k != 'f' {
		return jsonv2.UnmarshalDecode(dec, b, r.opts)
	}
	t, err := dec.ReadToken()
	if err != nil {
		return err
	}
	*b = t.Bool()
	return nil
}
