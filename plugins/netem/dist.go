package netem

import (
	"math"
	"sync"
)

// Distribution tables: what iproute2's netem/normal.c, pareto.c and
// paretonormal.c print into /usr/lib/tc/*.dist at build time (NIST Net's
// generators), computed here by the same definitions: a table is the
// inverse of the distribution's CDF, mean 0 and standard deviation
// NETEM_DIST_SCALE, sampled at 4096 points; tabledist scales an entry by
// the jitter. "experimental" (a table made from measured ping times by
// maketable) has no definition to compute and is not shipped.
const (
	netemDistScale = 8192  // NETEM_DIST_SCALE
	netemDistMax   = 16384 // NETEM_DIST_MAX: the most entries the kernel takes
	tableSize      = 16384 // the generators' TABLESIZE
)

var distTables = map[string]func() []int16{
	"normal":       sync.OnceValue(normalTable),
	"pareto":       sync.OnceValue(paretoTable),
	"paretonormal": sync.OnceValue(paretonormalTable),
}

// normalCDF is the generators' normal(x, 0, 1).
func normalCDF(x float64) float64 { return .5 + .5*math.Erf(x/math.Sqrt(2.0)) }

// inverseNormal inverts the normal CDF the generators' way: step x from
// -10 to 10.05 by .00005 (the float sum as C accumulates it) and keep, for
// each table index rint(TABLESIZE * F(x)), the last x that lands there.
func inverseNormal() []float64 {
	table := make([]float64, tableSize+1)
	for x := -10.0; x < 10.05; x += .00005 {
		table[int(math.RoundToEven(tableSize*normalCDF(x)))] = x
	}
	return table
}

func clampS16(v int) int16 { return int16(max(math.MinInt16, min(math.MaxInt16, v))) }

// normalTable is normal.c: every fourth point of the inverse, scaled.
func normalTable() []int16 {
	inv := inverseNormal()
	out := make([]int16, 0, tableSize/4)
	for i := 0; i < tableSize; i += 4 {
		out = append(out, clampS16(int(math.RoundToEven(inv[i]*netemDistScale))))
	}
	return out
}

// paretoValue is the Pareto (shape a = 3, scale 1) inverse CDF at the
// tail fraction i/65536, shifted by its mean 1.5 and scaled by NIST Net's
// 4/3 x NETEM_DIST_SCALE (the Pareto's standard deviation is sqrt(3)/2,
// so the table's is about 1.15 scales), capped at 32767.
func paretoValue(i int) int {
	const a = 3.0
	v := 1.0 / math.Pow(float64(i)/65536, 1.0/a)
	v = (v - 1.5) * (4.0 / 3.0) * netemDistScale
	v = min(v, 32767)
	return int(math.RoundToEven(v))
}

// paretoTable is pareto.c: i from 65536 down by 16.
func paretoTable() []int16 {
	out := make([]int16, 0, 65536/16)
	for i := 65536; i > 0; i -= 16 {
		out = append(out, int16(paretoValue(i)))
	}
	return out
}

// paretonormalTable is paretonormal.c: a quarter normal, three quarters
// Pareto, point by point (C's int division).
func paretonormalTable() []int16 {
	inv := inverseNormal()
	out := make([]int16, 0, tableSize/4)
	for i := 0; i < tableSize; i += 4 {
		norm := int(math.RoundToEven(inv[i] * netemDistScale))
		par := paretoValue(65536 - 4*i)
		out = append(out, clampS16((norm+3*par)/4))
	}
	return out
}

// tabledist is tabledist: a value with mean mu and spread sigma, uniform
// in [mu-sigma, mu+sigma) without a table, else the table's shape scaled
// by sigma (rounded the kernel's fixed-point way).
func tabledist(mu int64, sigma int32, st *crndState, p *rndState, dist []int16) int64 {
	if sigma == 0 {
		return mu
	}
	rnd := getCrandom(st, p)
	if dist == nil {
		return int64(rnd%(2*uint32(sigma))) + mu - int64(sigma)
	}
	t := int64(dist[rnd%uint32(len(dist))])
	x := int64(sigma%netemDistScale) * t
	if x >= 0 {
		x += netemDistScale / 2
	} else {
		x -= netemDistScale / 2
	}
	return x/netemDistScale + int64(sigma/netemDistScale)*t + mu
}
