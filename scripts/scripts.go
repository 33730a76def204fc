// Package scripts holds the shipped Tengo workloads (the seeds'
// experiments among them), embedded so that `txlab scripts` can list them
// and `txlab run NAME` can run one from any directory.
package scripts

import "embed"

// FS holds every *.tengo file of this directory.
//
//go:embed *.tengo
var FS embed.FS
