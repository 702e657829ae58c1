package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/remediate/execute"
)

type restoreOptions struct {
	s      Streams
	g      *globalOptions
	dir    string
	object string
	force  bool
	output string
	kube   *kubeFlags
	key    backupKeyFlags
}

func newRestoreCmd(s Streams, g *globalOptions) *cobra.Command {
	o := &restoreOptions{s: s, g: g, kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:   "restore DIR",
		Short: "Put back the objects a fix changed, from its backup directory",
		Long: `Puts back what 'unstick fix --apply' changed, from the backup directory it wrote: each
object it modified gets the metadata, spec and data it had before the fix (an update held to the
live resourceVersion), an object it deleted (a Job, a BundleDeployment) is created again, an
object it created (a Helm revision written by a rollback) is deleted. Helm release Secrets come
back byte for byte, payload included.

An object that changed after the fix wrote it — someone else's work, or a controller's — is
refused, with the reason, unless --force. Objects the fix only read are left alone.

Before any request to a cluster, the whole backup is checked and refused, naming the reason,
when: its backup.json or a journal line does not carry a MAC that verifies under the backup key
(the per-user key fix made, --backup-key-file or --backup-key-secret: never a file of the backup
directory), or the backup was written by an older unstick without one; its digests do not match
the index and files; a file is outside the backup directory, behind a symbolic link, or holds
another object than its index line names; an object is of a kind fix never writes; or the
journal records a delete of a kind fix never deletes. Then, by reads, a cluster it names must be
the cluster the backup was taken from (the UID of its kube-system namespace). --force does not
bypass any of these checks. Restore creates an object only when the journal records that fix
deleted it, and only of a kind fix deletes (a Job, a BundleDeployment).

The clusters are found by the kubeconfig context names the fix used (--kubeconfig as for fix).`,
		Example: `  # Everything a fix changed
  unstick restore ./unstick-fix-20261128T093000Z

  # One object
  unstick restore ./fix-prod-eu-1 \
      --object Secret/cattle-fleet-system/sh.helm.release.v1.fleet-agent-c-m-8k2lq.v4`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			if err := validateBackupDir(o.dir, o.g.displayName); err != nil {
				return err
			}
			if o.output != "table" && o.output != "json" {
				return usageErrorf("-o %q: want table or json", o.output)
			}
			if err := o.key.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.object, "object", "", "restore only this object: [CLUSTER:]KIND/NAMESPACE/NAME (KIND/NAME when cluster-scoped)")
	f.BoolVar(&o.force, "force", false, "restore objects that changed after the fix wrote them (never bypasses the backup's MAC, identity, digest, path or kind checks)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table|json")
	o.key.addFlags(f)
	o.kube.addFlags(f)
	return cmd
}

func (o *restoreOptions) run(ctx context.Context) error {
	// The backup is authenticated, and every check that needs no cluster made, before any
	// cluster is asked anything (but the key's Secret, with --backup-key-secret).
	key, err := o.key.load(ctx, o.kube, false)
	if err != nil {
		return err
	}
	b, err := execute.LoadBackup(o.dir, key)
	if err != nil {
		return err
	}
	index := b.Index
	raw, err := o.kube.cf.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return fmt.Errorf("reading kubeconfig: %w", err)
	}
	// Connect to the contexts the backup names (the fix's cluster names).
	seen := map[string]bool{}
	for _, e := range index {
		if !seen[e.Cluster] {
			seen[e.Cluster] = true
			if _, ok := raw.Contexts[e.Cluster]; ok {
				o.kube.contexts = append(o.kube.contexts, e.Cluster)
			}
		}
	}
	configs := map[string]*rest.Config{}
	if len(o.kube.contexts) > 0 {
		targets, err := o.kube.targets(ctx)
		if err != nil {
			return err
		}
		for _, t := range targets {
			configs[t.Name] = t.Config
		}
	}
	log := o.s.Out
	if o.output == "json" {
		log = o.s.ErrOut
	}
	res, err := execute.Restore(ctx, execute.RestoreOptions{Dir: o.dir, Object: o.object, Force: o.force, Clients: execute.NewClients(configs), Out: log, Key: key})
	if o.output == "json" {
		enc := json.NewEncoder(o.s.Out)
		enc.SetIndent("", "  ")
		if res == nil {
			res = []execute.RestoreOutcome{}
		}
		if werr := enc.Encode(map[string]any{"restored": res}); werr != nil {
			return werr
		}
	}
	if err != nil {
		return err
	}
	refused := 0
	for _, r := range res {
		if r.Status == execute.Refused {
			refused++
		}
	}
	if refused > 0 {
		return fmt.Errorf("%s not restored (see above)", plural.Of(refused, "object"))
	}
	return nil
}
