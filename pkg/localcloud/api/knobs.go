package api

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Quotas bound the number of resources.
type Quotas struct {
	Instances        int `json:"instances"`
	LoadBalancers    int `json:"loadBalancers"`
	RoutesPerCluster int `json:"routesPerCluster"`
}

// Knobs are the realism settings, changeable at runtime and kept in the
// cloud's state across restarts.
type Knobs struct {
	Latency            Duration `json:"latency"`
	LBProvisioningTime Duration `json:"lbProvisioningTime"`
	LBDeletionTime     Duration `json:"lbDeletionTime"`
	RateLimit          float64  `json:"rateLimit"`
	RateBurst          int      `json:"rateBurst"`
	ErrorRate          float64  `json:"errorRate"`
	Quotas             Quotas   `json:"quotas"`
}

// DefaultKnobs are the settings of a server started without flags.
func DefaultKnobs() Knobs {
	return Knobs{
		LBProvisioningTime: Duration(2 * time.Second),
		LBDeletionTime:     Duration(time.Second),
		RateBurst:          10,
		Quotas:             Quotas{Instances: 10000, LoadBalancers: 200, RoutesPerCluster: 50},
	}
}

// KnobsPatch is the body of PUT /v1/admin/config: fields left out keep
// their current value.
type KnobsPatch struct {
	Latency            *Duration    `json:"latency,omitempty"`
	LBProvisioningTime *Duration    `json:"lbProvisioningTime,omitempty"`
	LBDeletionTime     *Duration    `json:"lbDeletionTime,omitempty"`
	RateLimit          *float64     `json:"rateLimit,omitempty"`
	RateBurst          *int         `json:"rateBurst,omitempty"`
	ErrorRate          *float64     `json:"errorRate,omitempty"`
	Quotas             *QuotasPatch `json:"quotas,omitempty"`
}

// QuotasPatch is the quota part of KnobsPatch.
type QuotasPatch struct {
	Instances        *int `json:"instances,omitempty"`
	LoadBalancers    *int `json:"loadBalancers,omitempty"`
	RoutesPerCluster *int `json:"routesPerCluster,omitempty"`
}

// Bounds of the knobs. They are wide enough for any experiment on one
// machine and narrow enough that a typo (a rate of 1e-300 per second, a
// provisioning time of centuries) is refused rather than silently making
// the cloud unusable.
const (
	MaxLatency        = time.Minute
	MaxLBTransition   = time.Hour
	MinRateLimit      = 0.01
	MaxRateLimit      = 1e6
	MaxRateBurst      = 1_000_000
	MaxQuota          = 1_000_000
	knobDurationRange = "from 0s to "
)

// knob describes one realism setting by its key, the JSON path in Knobs
// (exact case), so that the CLI, the flags and validation share one table.
type knob struct {
	key   string
	flag  string // of localcloud serve (and the sandbox)
	help  string
	get   func(Knobs) string
	set   func(*KnobsPatch, string) error
	check func(Knobs) error
}

func durationKnob(key, flag, help string, limit time.Duration, field func(*Knobs) *Duration, patch func(*KnobsPatch) **Duration) knob {
	return knob{
		key: key, flag: flag, help: help,
		get: func(k Knobs) string { return time.Duration(*field(&k)).String() },
		set: func(p *KnobsPatch, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return Invalid(key, fmt.Sprintf("%q is not a duration such as 150ms or 2s", v))
			}
			dd := Duration(d)
			*patch(p) = &dd
			return nil
		},
		check: func(k Knobs) error {
			if d := time.Duration(*field(&k)); d < 0 || d > limit {
				return Invalid(key, fmt.Sprintf("%s is out of range: want %s%s", d, knobDurationRange, limit))
			}
			return nil
		},
	}
}

//nolint:unparam // MaxRateBurst and MaxQuota are separate limits that happen to be equal today.
func intKnob(key, flag, help string, limit int, field func(*Knobs) *int, patch func(*KnobsPatch) **int) knob {
	return knob{
		key: key, flag: flag, help: help,
		get: func(k Knobs) string { return strconv.Itoa(*field(&k)) },
		set: func(p *KnobsPatch, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return Invalid(key, fmt.Sprintf("%q is not an integer", v))
			}
			*patch(p) = &n
			return nil
		},
		check: func(k Knobs) error {
			if n := *field(&k); n < 0 || n > limit {
				return Invalid(key, fmt.Sprintf("%d is out of range: want 0 to %d", n, limit))
			}
			return nil
		},
	}
}

func floatKnob(key, flag, help string, field func(*Knobs) *float64, patch func(*KnobsPatch) **float64, check func(float64) string) knob {
	return knob{
		key: key, flag: flag, help: help,
		get: func(k Knobs) string { return strconv.FormatFloat(*field(&k), 'g', -1, 64) },
		set: func(p *KnobsPatch, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return Invalid(key, fmt.Sprintf("%q is not a number", v))
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				// JSON cannot carry these: refuse them here, by name.
				return Invalid(key, fmt.Sprintf("%g is not a finite number", f))
			}
			*patch(p) = &f
			return nil
		},
		check: func(k Knobs) error {
			f := *field(&k)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return Invalid(key, fmt.Sprintf("%g is not a finite number", f))
			}
			if want := check(f); want != "" {
				return Invalid(key, fmt.Sprintf("%g is out of range: want %s", f, want))
			}
			return nil
		},
	}
}

func quotasPatch(p *KnobsPatch) *QuotasPatch {
	if p.Quotas == nil {
		p.Quotas = &QuotasPatch{}
	}
	return p.Quotas
}

var knobTable = []knob{
	durationKnob("latency", "latency", "added latency per API call", MaxLatency,
		func(k *Knobs) *Duration { return &k.Latency }, func(p *KnobsPatch) **Duration { return &p.Latency }),
	durationKnob("lbProvisioningTime", "lb-provisioning-time", "time a load balancer spends provisioning", MaxLBTransition,
		func(k *Knobs) *Duration { return &k.LBProvisioningTime }, func(p *KnobsPatch) **Duration { return &p.LBProvisioningTime }),
	durationKnob("lbDeletionTime", "lb-deletion-time", "time a load balancer spends deleting", MaxLBTransition,
		func(k *Knobs) *Duration { return &k.LBDeletionTime }, func(p *KnobsPatch) **Duration { return &p.LBDeletionTime }),
	floatKnob("rateLimit", "rate-limit", "API requests per second before 429s; 0 disables",
		func(k *Knobs) *float64 { return &k.RateLimit }, func(p *KnobsPatch) **float64 { return &p.RateLimit },
		func(f float64) string {
			if f != 0 && (f < MinRateLimit || f > MaxRateLimit) {
				return fmt.Sprintf("0 (off) or %g to %g", MinRateLimit, MaxRateLimit)
			}
			return ""
		}),
	intKnob("rateBurst", "rate-burst", "token bucket size of the rate limit", MaxRateBurst,
		func(k *Knobs) *int { return &k.RateBurst }, func(p *KnobsPatch) **int { return &p.RateBurst }),
	floatKnob("errorRate", "error-rate", "fraction of API calls answered 503 (0 to 1)",
		func(k *Knobs) *float64 { return &k.ErrorRate }, func(p *KnobsPatch) **float64 { return &p.ErrorRate },
		func(f float64) string {
			if f < 0 || f > 1 {
				return "0 to 1"
			}
			return ""
		}),
	intKnob("quotas.instances", "quota-instances", "maximum live instances", MaxQuota,
		func(k *Knobs) *int { return &k.Quotas.Instances }, func(p *KnobsPatch) **int { return &quotasPatch(p).Instances }),
	intKnob("quotas.loadBalancers", "quota-lbs", "maximum load balancers", MaxQuota,
		func(k *Knobs) *int { return &k.Quotas.LoadBalancers }, func(p *KnobsPatch) **int { return &quotasPatch(p).LoadBalancers }),
	intKnob("quotas.routesPerCluster", "quota-routes", "maximum routes in one cluster's route table", MaxQuota,
		func(k *Knobs) *int { return &k.Quotas.RoutesPerCluster }, func(p *KnobsPatch) **int { return &quotasPatch(p).RoutesPerCluster }),
}

// KnobKeys lists every knob's key, in display order.
func KnobKeys() []string {
	keys := make([]string, len(knobTable))
	for i, k := range knobTable {
		keys[i] = k.key
	}
	return keys
}

// KnobFlag is the command-line flag of localcloud serve that sets the knob
// with key ("" for an unknown key).
func KnobFlag(key string) string {
	if k, ok := findKnob(key); ok {
		return k.flag
	}
	return ""
}

// FlagError names the flag of the knob a validation error is about, for
// commands that set knobs with flags: "--rate-limit: rateLimit: ...".
func FlagError(err error) error {
	var ae *Error
	if errors.As(err, &ae) {
		if f := KnobFlag(ae.Field); f != "" {
			return fmt.Errorf("--%s: %s", f, ae.Message)
		}
	}
	return err
}

// KnobHelp says what the knob with key does ("" for an unknown key).
func KnobHelp(key string) string {
	if k, ok := findKnob(key); ok {
		return k.help
	}
	return ""
}

func findKnob(key string) (knob, bool) {
	i := slices.IndexFunc(knobTable, func(k knob) bool { return k.key == key })
	if i < 0 {
		return knob{}, false
	}
	return knobTable[i], true
}

func unknownKnob(key string) error {
	return Invalid(key, "unknown knob; keys are exact-case, one of "+strings.Join(KnobKeys(), ", "))
}

// Get returns the value of the knob named key, as Set accepts it.
func (k Knobs) Get(key string) (string, error) {
	d, ok := findKnob(key)
	if !ok {
		return "", unknownKnob(key)
	}
	return d.get(k), nil
}

// Set adds key=value to the patch, parsing the value by the knob's type.
// Bounds are checked by Knobs.Validate once the patch is applied.
func (p *KnobsPatch) Set(key, value string) error {
	d, ok := findKnob(key)
	if !ok {
		return unknownKnob(key)
	}
	return d.set(p, strings.TrimSpace(value))
}

// Validate checks every knob against its bounds; the error names the knob
// and the value refused.
func (k Knobs) Validate() error {
	for _, d := range knobTable {
		if err := d.check(k); err != nil {
			return err
		}
	}
	if k.RateLimit > 0 && k.RateBurst == 0 {
		return Invalid("rateBurst", fmt.Sprintf("0 is out of range: want at least 1 when rateLimit is %g", k.RateLimit))
	}
	return nil
}

// Apply returns k with the patch's fields applied.
func (k Knobs) Apply(p KnobsPatch) Knobs {
	setD := func(dst *Duration, src *Duration) {
		if src != nil {
			*dst = *src
		}
	}
	setI := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
		}
	}
	setF := func(dst *float64, src *float64) {
		if src != nil {
			*dst = *src
		}
	}
	setD(&k.Latency, p.Latency)
	setD(&k.LBProvisioningTime, p.LBProvisioningTime)
	setD(&k.LBDeletionTime, p.LBDeletionTime)
	setF(&k.RateLimit, p.RateLimit)
	setI(&k.RateBurst, p.RateBurst)
	setF(&k.ErrorRate, p.ErrorRate)
	if q := p.Quotas; q != nil {
		setI(&k.Quotas.Instances, q.Instances)
		setI(&k.Quotas.LoadBalancers, q.LoadBalancers)
		setI(&k.Quotas.RoutesPerCluster, q.RoutesPerCluster)
	}
	return k
}
