package testenv

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestStagingModules(t *testing.T) {
	gomod := []byte("module k8s.io/kubernetes\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/client-go => ./staging/src/k8s.io/client-go\n\tgithub.com/x/y => github.com/x/y v1.0.0\n)\nreplace k8s.io/kms => ./staging/src/k8s.io/kms\n")
	got := stagingModules(gomod)
	want := []string{"k8s.io/api", "k8s.io/client-go", "k8s.io/kms"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestStripTemplateLines(t *testing.T) {
	in := "{{- if .Values.crds }}\napiVersion: v1\n  # {{ a comment }}\n{{- end }}\n"
	out, err := stripTemplateLines([]byte(in), "f")
	if err != nil || string(out) != "apiVersion: v1\n  # {{ a comment }}\n" {
		t.Fatalf("got %q, %v", out, err)
	}
	if _, err := stripTemplateLines([]byte("name: {{ .Release.Name }}\n"), "f"); err == nil || !strings.Contains(err.Error(), "f:1") {
		t.Errorf("an inline expression: got %v, want an error naming the line", err)
	}
}

func TestRemoveField(t *testing.T) {
	for _, tc := range []struct{ path, in, want string }{
		{"qosClass", `{"qosClass":"x","phase":"Running"}`, `{"phase":"Running"}`},
		{"conditions[1].type", `{"conditions":[{"type":"A"},{"type":"B"}]}`, `{"conditions":[{"type":"A"},{}]}`},
		{"conditions[1].lastTransitionTime", `{"conditions":[{"type":"A"},{"type":"B"}]}`, `{"conditions":[{"type":"A"}]}`},
		{"conditions", `{"conditions":[{"type":"A"}]}`, `{}`},
		{"labels[a.b/c]", `{"labels":{"a.b/c":"1","d":"2"}}`, `{"labels":{"d":"2"}}`},
	} {
		var obj map[string]any
		_ = json.Unmarshal([]byte(tc.in), &obj)
		if !removeField(obj, tc.path) {
			t.Errorf("%s: nothing removed", tc.path)
		}
		got, _ := json.Marshal(obj)
		if string(got) != tc.want {
			t.Errorf("%s: got %s, want %s", tc.path, got, tc.want)
		}
	}
	var obj map[string]any
	_ = json.Unmarshal([]byte(`{"phase":"x"}`), &obj)
	if removeField(obj, "missing") {
		t.Errorf("removed a field that is not there")
	}
}

func TestFixJobConditions(t *testing.T) {
	status := map[string]any{"conditions": []any{map[string]any{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}}}
	fixJobConditions(status)
	conds := status["conditions"].([]any)
	if len(conds) != 2 || conds[0].(map[string]any)["type"] != "FailureTarget" || conds[1].(map[string]any)["type"] != "Failed" {
		t.Errorf("conditions %v", conds)
	}
	fixJobConditions(status)
	if len(status["conditions"].([]any)) != 2 {
		t.Errorf("added twice: %v", status["conditions"])
	}
}
