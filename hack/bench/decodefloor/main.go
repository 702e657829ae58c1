// Command decodefloor is the floor an offline scan is measured against: it reads every
// regular file under a directory and decodes each as one JSON document into `any`, on
// GOMAXPROCS workers, and does nothing else. hack/bench/offline.sh runs it beside
// `unstick scan --from DIR -o json`.
//
//	decodefloor DIR
package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: decodefloor DIR")
		os.Exit(2)
	}
	files, err := list(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	docs, bytes := decodeAll(files)
	fmt.Printf("%d files, %d bytes, %d JSON documents decoded\n", len(files), bytes, docs)
}

// list returns every regular file under root. A root that is a link is followed, as
// unstick follows it (a "latest" link to a bundle).
func list(root string) ([]string, error) {
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	return files, err
}

// decodeAll reads and decodes the files on GOMAXPROCS workers; a file that is not JSON (the
// bundle's YAML metadata) is read and counted in bytes but not in documents.
func decodeAll(files []string) (docs, bytes int64) {
	var nDocs, nBytes atomic.Int64
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for p := range jobs {
				data, err := os.ReadFile(p)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					continue
				}
				nBytes.Add(int64(len(data)))
				var v any
				if json.Unmarshal(data, &v) == nil {
					nDocs.Add(1)
				}
			}
		})
	}
	for _, f := range files {
		jobs <- f
	}
	close(jobs)
	wg.Wait()
	return nDocs.Load(), nBytes.Load()
}
