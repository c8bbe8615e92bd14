package rewardmodels

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// ListBases puts the default first only when every worker can load it,
// lists a base some worker lacks as unreachable (any free worker may take
// the job), estimates on the best device, and says what to change.
func TestListBases(t *testing.T) {
	t.Parallel()
	p := func(n int64) *int64 { return &n }
	demo := BaseChoice{ID: "/d/models/demo-qwen3-tiny", Name: DemoBaseName, Source: BaseSourceDemo, Reachable: true, Params: p(5_000_000)}
	mine := BaseChoice{ID: "/roots/mine", Name: "mine", Source: BaseSourceLocal, Reachable: true, Params: p(100_000_000)}
	hubUp := BaseChoice{ID: DefaultBaseModel, Name: DefaultBaseModel, Source: BaseSourceHub, Reachable: true}
	hubDown := hubUp
	hubDown.Reachable = false
	ids := func(l BaseList) (out []string) {
		for _, b := range l.Bases {
			r := "+"
			if !b.Reachable {
				r = "-"
			}
			out = append(out, r+b.Name)
		}
		return out
	}

	roots := []string{"/d/models", "/roots"}
	up := ListBases([]WorkerBases{{Device: DeviceCPU, Bases: []BaseChoice{demo, mine, hubUp}}}, roots, "none")
	require.Equal(t, []string{"+" + DefaultBaseModel, "+" + DemoBaseName, "+mine"}, ids(up))
	require.Nil(t, up.Hint)
	require.True(t, up.Bases[0].Default)
	require.InDelta(t, SecondsPerPair(DeviceCPU, DefaultBaseParams), *up.Bases[0].SecondsPerPair, 1e-9)
	require.Equal(t, DeviceCPU, *up.Compute.Device)

	// One worker without the hub, a GPU worker without "mine".
	down := ListBases([]WorkerBases{
		{Device: DeviceCPU, Bases: []BaseChoice{demo, mine, hubDown}, HubError: "lookup huggingface.co: no such host"},
		{Device: DeviceGPU, Bases: []BaseChoice{demo, hubUp}},
	}, roots, "none")
	require.Equal(t, []string{"+" + DemoBaseName, "-" + DefaultBaseModel, "-mine"}, ids(down)) // unreachable last, by name
	require.Equal(t, BaseCompute{Workers: 2, GPUWorkers: 1, Device: down.Compute.Device}, down.Compute)
	require.Equal(t, DeviceGPU, *down.Compute.Device)
	require.InDelta(t, SecondsPerPair(DeviceGPU, 5_000_000), *down.Bases[0].SecondsPerPair, 1e-9)
	require.NotNil(t, down.Hint)
	require.Equal(t, "The default base model Qwen/Qwen3-0.6B cannot be loaded: the workers cannot reach the Hugging Face hub "+
		"(lookup huggingface.co: no such host). Set HF_ENDPOINT on the workers to a hub or mirror they can reach (and HF_TOKEN if it needs one), "+
		"or choose a base model this server has locally: demo-qwen3-tiny.", *down.Hint)

	// A directory outside the API's roots is not offered, and the hint says why.
	outside := ListBases([]WorkerBases{{Device: DeviceCPU, Bases: []BaseChoice{demo, mine, hubUp}}}, []string{"/d/models"}, "none")
	require.Equal(t, []string{"+" + DefaultBaseModel, "+" + DemoBaseName}, ids(outside))
	require.Equal(t, "Not offered: mine — on the workers but outside this API's model roots; add their directories to CRITIC_MODEL_ROOTS on the API to offer them.", *outside.Hint)

	none := ListBases(nil, roots, "no worker")
	require.Equal(t, []string{"-" + DefaultBaseModel}, ids(none))
	require.Nil(t, none.Bases[0].SecondsPerPair)
	require.Equal(t, "no worker", *none.Hint)
	require.Nil(t, none.Compute.Device)

	// Many local bases: the advice names three and counts the rest.
	require.Equal(t, "Set HF_ENDPOINT on the workers to a hub or mirror they can reach (and HF_TOKEN if it needs one), "+
		"or choose a base model this server has locally: a, b, c, and 2 more (GET /base-models lists them).", HubAdvice([]string{"a", "b", "c", "d", "e"}))
}
