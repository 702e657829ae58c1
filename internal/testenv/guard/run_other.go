//go:build !unix

package guard

func run(target string, args []string) int { return 1 }
