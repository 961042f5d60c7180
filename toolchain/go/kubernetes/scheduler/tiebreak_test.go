package main

import (
	"context"
	"fmt"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
)

func normalized(t *testing.T, d digit, names ...string) []int64 {
	t.Helper()
	p, err := newTieBreak(d)(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	scores := make(fwk.NodeScoreList, len(names))
	for i, n := range names {
		scores[i] = fwk.NodeScore{Name: n}
	}
	if st := p.(*tieBreak).NormalizeScore(context.Background(), nil, nil, scores); st != nil {
		t.Fatal(st)
	}
	out := make([]int64, len(scores))
	for i, s := range scores {
		out[i] = s.Score
	}
	return out
}

func TestTheFirstNameScoresMost(t *testing.T) {
	got := normalized(t, low, "gpu-2", "gpu-0", "gpu-1")
	want := []int64{98, 100, 99}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("low digit: got %v, want %v", got, want)
	}
	if got := normalized(t, high, "gpu-2", "gpu-0", "gpu-1"); fmt.Sprint(got) != "[100 100 100]" {
		t.Fatalf("high digit of ranks below 101: got %v, want all 100", got)
	}
}

func TestTwoDigitsOrderManyNodes(t *testing.T) {
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("n%04d", i)
	}
	hi, lo := normalized(t, high, names...), normalized(t, low, names...)
	for i := 1; i < len(names); i++ {
		before := hi[i-1]*base + lo[i-1]
		now := hi[i]*base + lo[i]
		if now >= before {
			t.Fatalf("%s (%d) does not score below %s (%d)", names[i], now, names[i-1], before)
		}
	}
}

func TestTheTieBreakersNeverOutweighOnePointOfTheDefaults(t *testing.T) {
	most := base*fwk.MaxNodeScore + fwk.MaxNodeScore // weights 101 and 1
	if most >= base*base {
		t.Fatalf("the tie-breakers add up to %d, one default point weighs %d", most, base*base)
	}
}

func TestNamesAndDigits(t *testing.T) {
	for _, c := range []struct {
		d    digit
		name string
	}{{high, HighName}, {low, LowName}} {
		p, _ := newTieBreak(c.d)(context.Background(), nil, nil)
		if p.Name() != c.name {
			t.Errorf("got %s, want %s", p.Name(), c.name)
		}
	}
}
