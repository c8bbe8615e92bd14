package rewardmodels

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/criticml/critic/domain"
)

// EnvModelRoots names the operator's extra local model roots
// (comma-separated absolute directories).
const EnvModelRoots = "CRITIC_MODEL_ROOTS"

// hubID is a Hugging Face hub id in org/name form.
var hubID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)

// ErrBaseModel is the one answer to a base model that is neither a hub id
// nor a directory under an allowed root. It names no path: the message
// goes to the tenant, and a server path (or whether one exists) is not the
// tenant's to learn.
var ErrBaseModel = domain.InvalidField("base_model",
	"base_model must be a Hugging Face hub id such as Qwen/Qwen3-0.6B, or a local directory under a model root "+
		"this deployment allows (its data directory's models folder, or one named in "+EnvModelRoots+")")

// IsLocalBase reports whether base names a directory rather than a hub id.
func IsLocalBase(base string) bool {
	return strings.HasPrefix(base, "/") || strings.HasPrefix(base, ".") || strings.Contains(base, `\`) || filepath.IsAbs(base)
}

// CheckBaseModel is the rule for a base model a tenant names (issue 31): a
// hub id in org/name form, or an absolute path that, once cleaned, lies
// strictly inside one of roots (absolute, cleaned directories). Anything
// else — /etc, a relative path, ../ escapes, another owner's checkpoint
// cache (which is never a root) — is ErrBaseModel. Pure: whether the
// directory exists is the worker's to find out.
func CheckBaseModel(base string, roots []string) error {
	if !IsLocalBase(base) {
		if hubID.MatchString(base) && !strings.Contains(base, "..") {
			return nil
		}
		return ErrBaseModel
	}
	if filepath.IsAbs(base) && UnderRoot(base, roots) {
		return nil
	}
	return ErrBaseModel
}

// UnderRoot reports whether the absolute path p lies strictly inside one
// of roots, compared on cleaned paths (so /models/../etc is /etc).
func UnderRoot(p string, roots []string) bool {
	p = filepath.Clean(p)
	for _, r := range roots {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		rel, err := filepath.Rel(filepath.Clean(r), p)
		if err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// ParseModelRoots reads CRITIC_MODEL_ROOTS: comma-separated absolute
// directories; a relative one is an error naming the variable.
func ParseModelRoots(s string) ([]string, error) {
	var out []string
	for r := range strings.SplitSeq(s, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if !filepath.IsAbs(r) {
			return nil, errors.New(EnvModelRoots + ": " + r + " is not an absolute directory")
		}
		out = append(out, filepath.Clean(r))
	}
	return out, nil
}

// Where a base model a worker can load comes from (BaseChoice.Source).
const (
	// BaseSourceDemo is the tiny demo base `critic run` creates under
	// DataDir/models/demo-qwen3-tiny.
	BaseSourceDemo = "demo"
	// BaseSourceCache is a hub model already downloaded into the worker's
	// cache (DataDir/models/<org>/<name>/<revision>).
	BaseSourceCache = "cache"
	// BaseSourceLocal is a checkpoint directory under CRITIC_MODEL_ROOTS or
	// another directory of the cache.
	BaseSourceLocal = "local"
	// BaseSourceHub is a model fetched from the hub at training time.
	BaseSourceHub = "hub"
)

// DemoBaseName is the directory name of the demo base under DataDir/models.
const DemoBaseName = "demo-qwen3-tiny"

// BaseChoice is one base model a worker can train from now, as workers
// report it with their claim polls and GET /base-models lists it. ID is
// what base_model takes: a hub id, or an absolute directory under the
// worker's model roots.
type BaseChoice struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Source    string `json:"source"`
	Reachable bool   `json:"reachable"`
	// Params is the parameter count read from the checkpoint's
	// safetensors headers; nil when unknown (a hub model not downloaded).
	Params *int64 `json:"params"`
	// SizeBytes is the weights' size on disk; nil when unknown.
	SizeBytes *int64 `json:"size_bytes"`
}

// HubUnreachablePhrase begins every "the hub cannot be reached" failure,
// so a client can tell that failure from others (the web app offers Retry
// for it only once something changed).
const HubUnreachablePhrase = "cannot reach the Hugging Face hub"

// HubUnreachableError is a base model download that never reached the hub
// (DNS, refused connection, timeout). A raw "lookup huggingface.co: no
// such host" tells a new user nothing; this says which settings decide
// where the hub is (HF_ENDPOINT, HF_TOKEN) and which bases need no hub.
type HubUnreachableError struct {
	Endpoint string // the hub address tried
	Model    string // the hub id being fetched
	Cause    string // the network error, short
	Local    []string
}

func (e *HubUnreachableError) Error() string {
	var b strings.Builder
	b.WriteString(HubUnreachablePhrase + " at " + e.Endpoint + " to download " + e.Model)
	if e.Cause != "" {
		b.WriteString(" (" + e.Cause + ")")
	}
	b.WriteString(". " + HubAdvice(e.Local))
	return b.String()
}

// HubAdvice is what to change when the hub cannot be reached: the worker's
// HF_ENDPOINT (a reachable hub or mirror) and HF_TOKEN (if that hub needs
// one), or a base that needs no hub — those named in local.
func HubAdvice(local []string) string {
	s := "Set HF_ENDPOINT on the workers to a hub or mirror they can reach (and HF_TOKEN if it needs one)"
	if len(local) == 0 {
		return s + ", or put a checkpoint directory under a model root (CRITIC_MODEL_ROOTS) and choose it as the base model."
	}
	if len(local) > maxAdvisedBases {
		local = append(local[:maxAdvisedBases:maxAdvisedBases], fmt.Sprintf("and %d more (GET /base-models lists them)", len(local)-maxAdvisedBases))
	}
	return s + ", or choose a base model this server has locally: " + strings.Join(local, ", ") + "."
}

// maxAdvisedBases is how many local bases HubAdvice names: enough to pick
// one, short enough to read in an error.
const maxAdvisedBases = 3

// WorkerBases is one worker's latest presence report: its device and the
// bases it can load (jobs.ClaimNextTraining).
type WorkerBases struct {
	Device   string
	Bases    []BaseChoice
	HubError string
}

// ListedBase is a base model as GET /base-models lists it.
type ListedBase struct {
	BaseChoice
	// Default marks the spec's default base model (DefaultBaseModel).
	Default bool `json:"default"`
	// SecondsPerPair is the training-time estimate of one pair on the
	// best device a worker reported (SecondsPerPair); nil without workers.
	SecondsPerPair *float64 `json:"seconds_per_pair"`
}

// BaseCompute is what the workers computing now are: how many reported in
// the presence window, how many of them on a GPU, and the device the
// estimates assume (the best one: a GPU when any worker has one).
type BaseCompute struct {
	Workers    int     `json:"workers"`
	GPUWorkers int     `json:"gpu_workers"`
	Device     *string `json:"device"`
}

// BaseList is GET /base-models.
type BaseList struct {
	Bases   []ListedBase `json:"bases"`
	Hint    *string      `json:"hint"`
	Compute BaseCompute  `json:"compute"`
}

// ListBases merges what the workers reported into the list the create
// dialog offers: every base some worker has, reachable when every worker
// reporting can load it (any free worker may claim the training), the
// default first when it is reachable, then the demo base, cached and
// local ones by name, unreachable ones last. Without any worker the hub
// default is listed unreachable. Hint says what to change when the
// default cannot be reached, or when no worker reported. A directory a
// worker has but the API would refuse as base_model (outside roots, the
// API's model roots) is not offered; the hint names it and the variable.
func ListBases(workers []WorkerBases, roots []string, noWorkersHint string) BaseList {
	out := BaseList{Bases: []ListedBase{}, Compute: BaseCompute{Workers: len(workers)}}
	device := ""
	byID := map[string]*ListedBase{}
	var order []string
	hubErr := ""
	var refused []string
	for _, w := range workers {
		if w.Device == DeviceGPU {
			out.Compute.GPUWorkers++
			device = DeviceGPU
		} else if device == "" {
			device = DeviceCPU
		}
		hubErr = cmp.Or(hubErr, w.HubError)
		for _, b := range w.Bases {
			if CheckBaseModel(b.ID, roots) != nil {
				if !slices.Contains(refused, b.Name) {
					refused = append(refused, b.Name)
				}
				continue
			}
			if lb, ok := byID[b.ID]; ok {
				lb.Reachable = lb.Reachable && b.Reachable
				continue
			}
			byID[b.ID] = &ListedBase{BaseChoice: b, Default: b.ID == DefaultBaseModel}
			order = append(order, b.ID)
		}
	}
	for id, lb := range byID { // a base some worker lacks is not loadable by every worker
		for _, w := range workers {
			if !slices.ContainsFunc(w.Bases, func(b BaseChoice) bool { return b.ID == id }) {
				lb.Reachable = false
			}
		}
	}
	if _, ok := byID[DefaultBaseModel]; !ok {
		byID[DefaultBaseModel] = &ListedBase{BaseChoice: BaseChoice{ID: DefaultBaseModel, Name: DefaultBaseModel, Source: BaseSourceHub}, Default: true}
		order = append(order, DefaultBaseModel)
	}
	if device != "" {
		out.Compute.Device = &device
	}
	for _, id := range order {
		lb := byID[id]
		if device != "" {
			params := int64(0)
			if lb.Params != nil {
				params = *lb.Params
			} else if !lb.Default {
				params = -1
			}
			if params >= 0 {
				lb.SecondsPerPair = new(SecondsPerPair(device, params))
			}
		}
		out.Bases = append(out.Bases, *lb)
	}
	rank := func(b ListedBase) int {
		switch {
		case !b.Reachable:
			return 9
		case b.Default:
			return 0
		case b.Source == BaseSourceDemo:
			return 1
		case b.Source == BaseSourceCache:
			return 2
		case b.Source == BaseSourceLocal:
			return 3
		}
		return 4
	}
	slices.SortStableFunc(out.Bases, func(a, b ListedBase) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.Name, b.Name))
	})
	switch {
	case len(workers) == 0:
		out.Hint = &noWorkersHint
	case !byID[DefaultBaseModel].Reachable:
		var local []string
		for _, b := range out.Bases {
			if b.Reachable {
				local = append(local, b.Name)
			}
		}
		h := "The default base model " + DefaultBaseModel + " cannot be loaded: the workers " + HubUnreachablePhrase
		if hubErr != "" {
			h += " (" + hubErr + ")"
		}
		h += ". " + HubAdvice(local)
		out.Hint = &h
	}
	if len(refused) > 0 {
		h := "Not offered: " + strings.Join(refused, ", ") + " — on the workers but outside this API's model roots; add their directories to " +
			EnvModelRoots + " on the API to offer them."
		if out.Hint != nil {
			h = *out.Hint + " " + h
		}
		out.Hint = &h
	}
	return out
}
