package tokenizer

import (
	"container/heap"
	"sync"
)

// bpe is a byte-level BPE model. It works on the raw bytes of a pre-token
// rather than on its byte-level (GPT-2 alphabet) spelling: the alphabet is a
// bijection, so merging byte spans is the same as merging alphabet strings,
// and this skips building a mapped string for every piece.
type bpe struct {
	// byteID is the id of each single byte's token.
	byteID [256]int32
	// merges maps a (left id, right id) pair to its rank and merged id.
	merges map[uint64]merge
	// rawVocab maps a token's raw bytes to its id, for ignore_merges.
	rawVocab     map[string]int32
	ignoreMerges bool

	mu    sync.RWMutex
	cache map[string][]int32
}

type merge struct {
	rank  int32
	newID int32
}

// cacheLimit bounds the per-word cache. Natural text has a heavy-tailed word
// distribution, so a plain bounded map (cleared when full) keeps hit rates
// high without LRU bookkeeping on the hot path.
const cacheLimit = 1 << 17

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// encode appends the ids of one pre-token (raw bytes) to dst.
func (m *bpe) encode(word string, dst []int) []int {
	if len(word) == 0 {
		return dst
	}
	if m.ignoreMerges {
		if id, ok := m.rawVocab[word]; ok {
			return append(dst, int(id))
		}
	}
	if len(word) == 1 {
		return append(dst, int(m.byteID[word[0]]))
	}
	m.mu.RLock()
	ids, ok := m.cache[word]
	m.mu.RUnlock()
	if !ok {
		ids = m.mergeWord(word)
		m.mu.Lock()
		if len(m.cache) >= cacheLimit {
			clear(m.cache)
		}
		m.cache[word] = ids
		m.mu.Unlock()
	}
	for _, id := range ids {
		dst = append(dst, int(id))
	}
	return dst
}

// mergeWord applies merges in rank order, leftmost first among equal ranks,
// exactly like HF's Word::merge_all (a min-heap of candidate pairs keyed by
// rank then position, with stale entries skipped when popped).
func (m *bpe) mergeWord(word string) []int32 {
	n := len(word)
	id := make([]int32, n)
	prev := make([]int32, n)
	next := make([]int32, n)
	alive := make([]bool, n)
	for i := range n {
		id[i] = m.byteID[word[i]]
		prev[i] = int32(i - 1)
		next[i] = int32(i + 1)
		alive[i] = true
	}
	next[n-1] = -1

	h := make(mergeHeap, 0, n)
	for i := 0; i+1 < n; i++ {
		if mg, ok := m.merges[pairKey(id[i], id[i+1])]; ok {
			h = append(h, candidate{rank: mg.rank, pos: int32(i), newID: mg.newID})
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		c := heap.Pop(&h).(candidate)
		p := c.pos
		if !alive[p] || next[p] < 0 {
			continue
		}
		q := next[p]
		// The pair may have changed since it was queued: only apply the merge
		// if the current pair still produces the same token.
		if mg, ok := m.merges[pairKey(id[p], id[q])]; !ok || mg.newID != c.newID {
			continue
		}
		id[p] = c.newID
		alive[q] = false
		next[p] = next[q]
		if next[q] >= 0 {
			prev[next[q]] = p
		}
		if pp := prev[p]; pp >= 0 {
			if mg, ok := m.merges[pairKey(id[pp], id[p])]; ok {
				heap.Push(&h, candidate{rank: mg.rank, pos: pp, newID: mg.newID})
			}
		}
		if nn := next[p]; nn >= 0 {
			if mg, ok := m.merges[pairKey(id[p], id[nn])]; ok {
				heap.Push(&h, candidate{rank: mg.rank, pos: p, newID: mg.newID})
			}
		}
	}
	out := make([]int32, 0, 4)
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, id[i])
	}
	return out
}

type candidate struct {
	rank, pos, newID int32
}

type mergeHeap []candidate

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(candidate)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
