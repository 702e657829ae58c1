package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/unstick-dev/unstick/internal/config"
	"github.com/unstick-dev/unstick/internal/remediate/execute"
)

// backupKeySecretKey is the data key of the Secret --backup-key-secret names.
const backupKeySecretKey = "key"

// backupKeyFlags choose the key that authenticates a backup directory: a file (by default
// the per-user key beside the configuration file) or a Secret in a cluster.
type backupKeyFlags struct {
	file   string
	secret string
}

func (k *backupKeyFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&k.file, "backup-key-file", "", "key that authenticates the backup directory (default ~/.config/unstick/"+execute.KeyFileName+", made on first use; never stored in the backup directory)")
	fs.StringVar(&k.secret, "backup-key-secret", "", "read the backup key from this Secret instead, NAMESPACE/NAME (data key \""+backupKeySecretKey+"\", at least 32 bytes), through the current context (or the first --context)")
}

func (k *backupKeyFlags) validate() error {
	if k.file != "" && k.secret != "" {
		return usageErrorf("--backup-key-file and --backup-key-secret name two keys; give one")
	}
	if k.secret != "" {
		if _, _, err := k.secretRef(); err != nil {
			return err
		}
	}
	return nil
}

func (k *backupKeyFlags) secretRef() (string, string, error) {
	ns, name, ok := strings.Cut(k.secret, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", "", usageErrorf("--backup-key-secret %q: want NAMESPACE/NAME", k.secret)
	}
	return ns, name, nil
}

// load reads the key. create makes the default per-user key when there is none yet (fix
// --apply); restore never makes one: a backup is checked with the key it was written under.
func (k *backupKeyFlags) load(ctx context.Context, kube *kubeFlags, create bool) (*execute.BackupKey, error) {
	if k.secret != "" {
		return k.fromSecret(ctx, kube)
	}
	path := k.file
	if path == "" {
		cfg := config.DefaultPath()
		if cfg == "" {
			return nil, fmt.Errorf("no home directory for the backup key; name one with --backup-key-file")
		}
		path = execute.DefaultKeyFile(filepath.Dir(cfg))
	}
	return execute.LoadKeyFile(path, create)
}

// fromSecret reads the key from a Secret, with the credentials of the current context (or
// the first --context): a get of that one Secret.
func (k *backupKeyFlags) fromSecret(ctx context.Context, kube *kubeFlags) (*execute.BackupKey, error) {
	ns, name, err := k.secretRef()
	if err != nil {
		return nil, err
	}
	kctx := ""
	if len(kube.contexts) > 0 {
		kctx = kube.contexts[0]
	} else if raw, err := kube.cf.ToRawKubeConfigLoader().RawConfig(); err == nil {
		kctx = raw.CurrentContext
	}
	cfg, err := kube.restConfig(kctx)
	if err != nil {
		return nil, fmt.Errorf("--backup-key-secret: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("--backup-key-secret: %w", err)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the backup key from Secret %s/%s (context %s): %w", ns, name, kctx, err)
	}
	return execute.NewBackupKey(sec.Data[backupKeySecretKey], fmt.Sprintf("Secret %s/%s data %q (context %s)", ns, name, backupKeySecretKey, kctx))
}
