package cli

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/catalog"
)

// Shell completion (cobra's `completion bash|zsh|fish|powershell`, and kubectl's plugin
// completion through kubectl_complete-unstick): verbs and flags come from cobra; these add
// the values — contexts, clusters and users of the kubeconfig, finding IDs and families,
// the clusters of an offline bundle.

// registerKubeCompletions completes the kubeconfig flags of every command that has them.
func registerKubeCompletions(root *cobra.Command) {
	completions := map[string]func(*clientcmdapi.Config) []string{
		"context": func(c *clientcmdapi.Config) []string { return keys(c.Contexts) },
		"cluster": func(c *clientcmdapi.Config) []string { return keys(c.Clusters) },
		"user":    func(c *clientcmdapi.Config) []string { return keys(c.AuthInfos) },
	}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		// LocalNonPersistentFlags builds a new flag set each call: once per command, as every
		// process builds the whole command tree before it runs one verb.
		local := c.LocalNonPersistentFlags()
		for flag, names := range completions {
			if local.Lookup(flag) != nil {
				_ = c.RegisterFlagCompletionFunc(flag, kubeconfigCompletion(names))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// kubeconfigCompletion lists names from the kubeconfig the command line points at
// (--kubeconfig, else $KUBECONFIG, else ~/.kube/config).
func kubeconfigCompletion(names func(*clientcmdapi.Config) []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if f := cmd.Flags().Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
			rules.ExplicitPath = f.Value.String()
		}
		cfg, err := rules.Load()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		return withPrefix(names(cfg), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// findingIDCompletion completes finding IDs and their families ("helm/").
func findingIDCompletion(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	c, err := catalog.Load()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, id := range c.IDs() {
		fam, _, _ := strings.Cut(id, "/")
		out = appendUnique(out, fam+"/")
		out = append(out, id)
	}
	return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// bundleClusterCompletion completes --only-cluster: the clusters/<name>/ directories of the
// --from bundle when it is a directory, else the kubeconfig's contexts.
func bundleClusterCompletion(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if f := cmd.Flags().Lookup("from"); f != nil && f.Value.String() != "" {
		entries, err := os.ReadDir(filepath.Join(f.Value.String(), "clusters"))
		if err == nil {
			var out []string
			for _, e := range entries {
				if e.IsDir() {
					out = append(out, e.Name())
				}
			}
			return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return kubeconfigCompletion(func(c *clientcmdapi.Config) []string { return keys(c.Contexts) })(cmd, args, toComplete)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func withPrefix(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
