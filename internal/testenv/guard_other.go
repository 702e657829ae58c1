//go:build !unix

package testenv

func guardedPaths(dir, apiserver, etcd string) (string, string, error) { return apiserver, etcd, nil }
