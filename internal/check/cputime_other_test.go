//go:build !unix

package check_test

import "time"

// processCPU is not measured here: the benchmark reports wall time only.
func processCPU() time.Duration { return 0 }
