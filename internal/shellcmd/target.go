package shellcmd

import "strings"

// Target is where a printed kubectl or helm command goes: the kubeconfig file, the context
// in it, and the API server URL that goes with the context when a cluster is reached through
// Rancher's proxy. These are the user's own configuration, free text: always quoted.
type Target struct {
	Kubeconfig string
	Context    string
	Server     string
	// Placeholder, when set, is printed unquoted instead of Context: the context is not
	// known and the user fills it in ("<management-context>").
	Placeholder string
}

// Flags are the connection flags of prog ("kubectl" or "helm") for t, each value quoted:
// "--kubeconfig F --context C --server S" (helm: --kube-context, --kube-apiserver).
func (t Target) Flags(prog string) (string, error) {
	ctxFlag, serverFlag := "--context", "--server"
	if prog == "helm" {
		ctxFlag, serverFlag = "--kube-context", "--kube-apiserver"
	}
	var parts []string
	if t.Kubeconfig != "" {
		f, err := flag("--kubeconfig", "kubeconfig file", t.Kubeconfig)
		if err != nil {
			return "", err
		}
		parts = append(parts, f)
	}
	if t.Placeholder != "" {
		parts = append(parts, ctxFlag+" "+t.Placeholder)
	} else {
		f, err := flag(ctxFlag, "kubeconfig context", t.Context)
		if err != nil {
			return "", err
		}
		parts = append(parts, f)
	}
	if t.Server != "" {
		f, err := flag(serverFlag, "API server URL", t.Server)
		if err != nil {
			return "", err
		}
		parts = append(parts, f)
	}
	return strings.Join(parts, " "), nil
}

// flag is "name value", or "name=value" when the value starts with '-' and would otherwise
// read as an option of its own.
func flag(name, what, v string) (string, error) {
	if err := Check(Text, v); err != nil {
		err.(*Invalid).What = what
		return "", err
	}
	if strings.HasPrefix(v, "-") {
		return name + "=" + Quote(v), nil
	}
	return name + " " + Quote(v), nil
}

// Program is prog ("kubectl" or "helm") with its connection flags for t, as the first
// argument of Sprintf; a context, file or URL that fails its rule withholds the command.
func Program(prog string, t Target) Arg {
	flags, err := t.Flags(prog)
	if err != nil {
		return Arg{err: err}
	}
	return Arg{text: prog + " " + flags, outside: true}
}
