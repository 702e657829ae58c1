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

Before any write, the whole backup is checked and refused, naming the reason, when: its
backup.json is missing (written by an older unstick) or its digests do not match the index and
files; a file is outside the backup directory, behind a symbolic link, or holds another object
than its index line names; an object is of a kind fix never writes; or a cluster it names is
not the cluster the backup was taken from (the UID of its kube-system namespace). --force does
not bypass any of these checks.

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
			return o.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.object, "object", "", "restore only this object: [CLUSTER:]KIND/NAMESPACE/NAME (KIND/NAME when cluster-scoped)")
	f.BoolVar(&o.force, "force", false, "restore objects that changed after the fix wrote them (never bypasses the backup's identity, digest, path or kind checks)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table|json")
	o.kube.addFlags(f)
	return cmd
}

func (o *restoreOptions) run(ctx context.Context) error {
	index, err := execute.ReadIndex(o.dir)
	if err != nil {
		return err
	}
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
	res, err := execute.Restore(ctx, execute.RestoreOptions{Dir: o.dir, Object: o.object, Force: o.force, Clients: execute.NewClients(configs), Out: log})
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
