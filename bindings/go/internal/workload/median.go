package workload

import "sort"

// Median returns a record whose numbers are the medians of those of recs (runs of one
// measurement), and whose other fields are the first run's; "runs" tells how many.
func Median(recs []Record) Record {
	out := Record{"runs": len(recs)}
	for k, v := range recs[0] {
		if _, ok := v.(float64); !ok {
			out[k] = v
			continue
		}
		vals := make([]float64, 0, len(recs))
		for _, r := range recs {
			vals = append(vals, toFloat(r[k]))
		}
		sort.Float64s(vals)
		out[k] = vals[len(vals)/2]
	}
	return out
}
