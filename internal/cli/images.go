package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/unstick-dev/unstick/internal/config"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
)

type imagesOptions struct {
	s Streams
	g *globalOptions

	from    string
	output  string
	target  string
	quiet   bool
	problem bool
	outFile string
	kube    *kubeFlags
	reg     *registryFlags
	live    bool

	cfg *config.Config
}

// imagesFormats are the outputs of `unstick images`.
var imagesFormats = []string{"table", "json", "csv"}

func newImagesCmd(s Streams, g *globalOptions) *cobra.Command {
	o := &imagesOptions{s: s, g: g, kube: newKubeFlags(), reg: &registryFlags{}}
	cmd := &cobra.Command{
		Use:   "images",
		Short: "List every image an upgrade depends on, and whether it exists for every node",
		Long: `Lists the image references upgrades depend on — each stage of every system-upgrade-controller
Plan (prepare, upgrade; an untagged Plan image with the Plan's version as its tag), the kubectl
image the controller drains and cordons with (SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE, default
rancher/kubectl:v1.30.3), the controller, the fleet-agent and cattle-cluster-agent Deployments,
and the SUC Jobs — with where each is used, and what its registry says: whether it exists, its
digest, the platforms it is built for, and which node platforms that use it it lacks.

Registries are asked with the registry protocol: a HEAD request for existence and digest, then
the manifest (and, for a single-platform image, its small config blob) for the platforms — never
a layer. Credentials come from the docker config ($DOCKER_CONFIG/config.json,
~/.docker/config.json and its credential helpers) and, live, from the imagePullSecrets the
workloads use. --offline-registry lists the references without asking anyone.

Works live (the kubeconfig flags, like scan) and on an offline bundle (--from). The exit code is
0 whatever the images' state; use 'unstick preflight' for a go/no-go.`,
		Example: `  # The images of an offline bundle, as CSV
  unstick images --from bundle.tar.gz -o csv

  # The current context, only the references with a problem
  unstick images --problems

  # What the Kubernetes upgrade Plans would pull for v1.31.4+rke2r1, against a plain-HTTP mirror
  unstick images --context prod --target-version v1.31.4+rke2r1 \
      --insecure-registry mirror.local:5000`,
		Args: noArgsFrom,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.live = o.from == "" || o.kube.used(cmd.Flags())
			if err := o.validate(); err != nil {
				return err
			}
			var err error
			if o.cfg, err = o.g.config(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "offline bundle to read: a directory or a .tar.gz/.tgz file")
	f.StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(imagesFormats, "|"))
	f.StringVar(&o.target, "target-version", "", "list what Kubernetes upgrade Plans would pull for this version (e.g. v1.31.4+rke2r1)")
	f.BoolVar(&o.problem, "problems", false, "list only references that are missing, lack a node platform, or could not be verified")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	f.StringVar(&o.outFile, "output-file", "", "write the list to this file instead of stdout")
	o.reg.addFlags(f)
	o.kube.addFlags(f)
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion(imagesFormats...))
	return cmd
}

func (o *imagesOptions) validate() error {
	if err := validateFrom(o.from, o.live); err != nil {
		return err
	}
	if err := validateOutputFile(o.outFile); err != nil {
		return err
	}
	ok := false
	for _, f := range imagesFormats {
		ok = ok || f == o.output
	}
	if !ok {
		return usageErrorf("-o %q: unknown output format (want one of %s)", o.output, strings.Join(imagesFormats, ", "))
	}
	if o.target != "" && !validTarget(o.target) {
		return usageErrorf("--target-version %q: want a Kubernetes version such as v1.31.4 or v1.31.4+rke2r1", o.target)
	}
	return o.reg.validate()
}

func (o *imagesOptions) run(ctx context.Context) error {
	l := &upgradeLoader{g: o.g, from: o.from, live: o.live, kube: o.kube, reg: o.reg, cfg: o.cfg, target: o.target, quiet: o.quiet}
	in, err := l.load(ctx)
	if err != nil {
		return err
	}
	if err := requireData(in.snap, l.inputName()); err != nil {
		return err
	}
	rows := imageRows(in)
	if o.problem {
		kept := rows[:0]
		for _, r := range rows {
			if r.problem() != "" {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	for _, e := range append(append([]finding.ScanError{}, in.snap.Errors...), in.registryErrors...) {
		o.g.log.Warn(e.String())
	}
	return writeOutput(o.outFile, o.s.Out, func(w io.Writer) error {
		switch o.output {
		case "json":
			return writeImagesJSON(w, rows, l.offline())
		case "csv":
			return writeImagesCSV(w, rows)
		}
		return writeImagesTable(w, rows, l.offlineReason())
	})
}

// imagesDocument is the JSON output of `unstick images`.
type imagesDocument struct {
	SchemaVersion string     `json:"schemaVersion"`
	Registry      string     `json:"registry"` // "checked" or "offline"
	Images        []imageRow `json:"images"`
}

func writeImagesJSON(w io.Writer, rows []imageRow, offline bool) error {
	doc := imagesDocument{SchemaVersion: "1", Registry: "checked", Images: rows}
	if offline {
		doc.Registry = "offline"
	}
	if doc.Images == nil {
		doc.Images = []imageRow{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// imagesCSVHeader is the stable column order of `unstick images -o csv`.
var imagesCSVHeader = []string{"reference", "canonical", "status", "digest", "platforms", "lacking_platforms", "pinned", "clusters", "used_by", "error"}

func writeImagesCSV(w io.Writer, rows []imageRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(imagesCSVHeader); err != nil {
		return err
	}
	for _, r := range rows {
		var clusters []string
		for _, u := range r.Uses {
			clusters = addOnce(clusters, u.Cluster)
		}
		rec := []string{r.Ref, r.Canonical, r.Status, r.Digest, platformList(r.Platforms), strings.Join(r.Lacking, " "),
			strconv.FormatBool(r.Pinned), strings.Join(clusters, " "), strings.Join(r.usedBy(), "; "), r.Error}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func platformList(ps []imageref.Platform) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return strings.Join(out, " ")
}

// writeImagesTable writes the inventory for a person; offlineWhy, when not empty, says why no
// registry was asked.
func writeImagesTable(w io.Writer, rows []imageRow, offlineWhy string) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "No images found that upgrades depend on.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tSTATUS\tPLATFORMS\tLACKS\tPINNED\tDIGEST\tUSED BY")
	for _, r := range rows {
		digest := "-"
		if r.Digest != "" {
			digest = strings.TrimPrefix(r.Digest, "sha256:")
			if len(digest) > 12 {
				digest = digest[:12]
			}
		}
		plats := platformList(r.Platforms)
		if plats == "" {
			plats = "-"
		}
		lacks := strings.Join(r.Lacking, " ")
		if lacks == "" {
			lacks = "-"
		}
		pinned := "yes"
		if !r.Pinned {
			pinned = "NO"
		}
		used := r.usedBy()
		first := used[0]
		if len(used) > 1 {
			first += fmt.Sprintf(" (+%d)", len(used)-1)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Ref, r.Status, plats, lacks, pinned, digest, first)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var notes []string
	for _, r := range rows {
		if r.Error != "" && (r.Status == string(imageref.Unreachable) || r.Status == string(imageref.Unauthorized) || r.Status == string(imageref.Invalid) || r.Status == string(imageref.OK)) {
			notes = append(notes, fmt.Sprintf("  %s: %s", r.Ref, r.Error))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nNOT VERIFIED")
		fmt.Fprintln(w, strings.Join(notes, "\n"))
	}
	if offlineWhy != "" {
		_, err := fmt.Fprintf(w, "\nRegistry not asked (%s): existence and platforms are unchecked.\n", offlineWhy)
		return err
	}
	return nil
}
