// Package unstick holds what the module's own files give its packages: the text of go.mod.
package unstick

import _ "embed"

//go:embed go.mod
var goMod string

// GoMod is the module's go.mod as the build saw it. The test bed (internal/testenv) keys its
// programs by these requirements; embedded, they are the same in every process, whatever its
// working directory.
func GoMod() string { return goMod }
