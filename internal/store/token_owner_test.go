package store_test

import (
	"context"
	"testing"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
)

// Only the lookups' own connections force the generic plan: the serving
// pool plans as PostgreSQL chooses.
func TestOnlyLookupConnectionsForceTheGenericPlan(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	var mode string
	if err := store.Pool(st).QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode); err != nil || mode != "auto" {
		t.Fatalf("the serving pool's plan_cache_mode: %q, %v; want auto", mode, err)
	}
	if err := store.LookupPool(st).QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode); err != nil || mode != "force_generic_plan" {
		t.Fatalf("the lookup pool's plan_cache_mode: %q, %v; want force_generic_plan", mode, err)
	}
}
