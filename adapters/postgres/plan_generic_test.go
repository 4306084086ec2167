package postgres

import (
	"regexp"
	"strings"
	"testing"
)

// TestGenericPlansFindRowsByKey prepares the adapter's statements on a
// fresh database, whose tables are empty and were never analyzed, and
// checks that none of the generic plans made there scans a table whole.
// Connections keep such a plan until the table's statistics change (see
// Open), so a scan planned on an empty table would run on every execution
// as the table grows: the take did that to ductus_messages until
// 2026-12-07 (TestTakeFindsMessagesByKey), the enqueue's and the
// reminders' lookups to ductus_actors. Each statement is explained with
// NULL for every parameter: a generic plan does not depend on them.
func TestGenericPlansFindRowsByKey(t *testing.T) {
	need(t)
	b := openSchema(t, newSchema(), nil)
	statements := map[string]string{
		"sqlLockActors": sqlLockActors, "sqlReadActors": sqlReadActors, "sqlReadKeys": sqlReadKeys,
		"sqlInsertRows": sqlInsertRows, "sqlAdvanceActors": sqlAdvanceActors, "sqlDeleteActors": sqlDeleteActors,
		"sqlEnqueueOne": sqlEnqueueOne, "sqlEnqueueOneExists": sqlEnqueueOneExists,
		"sqlEnqueueMany": sqlEnqueueMany, "sqlEnqueueManySystem": sqlEnqueueManySystem, "sqlEnqueueManyExists": sqlEnqueueManyExists,
		"sqlTellOneHot": sqlTellOneHot, "sqlTellRunHot": sqlTellRunHot, "sqlTellOne": sqlTellOne, "sqlTellRun": sqlTellRun,
		"sqlTellOneExists": sqlTellOneExists, "sqlTellRunExists": sqlTellRunExists,
		"sqlClaim": sqlClaim, "sqlClaimPKs": sqlClaimPKs, "sqlRenew": sqlRenew, "sqlRelease": sqlRelease, "sqlOwnedDue": sqlOwnedDue,
		"sqlTake": sqlTake, "sqlFence": sqlFence, "sqlFinish": sqlFinish, "sqlFailDead": sqlFailDead,
		"sqlFailRetry": sqlFailRetry, "sqlReturn": sqlReturn, "sqlHead": sqlHead,
		"sqlStageEffects": sqlStageEffects, "sqlStageSends": sqlStageSends, "sqlCancelReminders": sqlCancelReminders,
		"sqlSetReminders": sqlSetReminders, "sqlStageBroadcasts": sqlStageBroadcasts, "sqlOpenLane": sqlOpenLane,
		"sqlLockLanes": sqlLockLanes, "sqlSettleEffectLanes": sqlSettleEffectLanes, "sqlSettleSendLanes": sqlSettleSendLanes,
		"sqlClaimLanes": sqlClaimLanes, "sqlClaimEffectLanes": sqlClaimEffectLanes, "sqlSettleIdleLanes": sqlSettleIdleLanes,
		"sqlLockSends": sqlLockSends, "sqlDelivered": sqlDelivered, "sqlSendFull": sqlSendFull, "sqlSendBlocked": sqlSendBlocked,
		"sqlClaimReminders": sqlClaimReminders, "sqlLockReminders": sqlLockReminders,
	}
	// Statements that always run with a custom plan (customPlan), made
	// with the tables' current sizes, so their generic plan is never used.
	custom := map[string]string{
		"sqlClaimUnordered": sqlClaimUnordered, "sqlClaimRuns": sqlClaimRuns,
		"sqlFinishEffects": sqlFinishEffects, "sqlClaimSends": sqlClaimSends,
	}
	scan := regexp.MustCompile(`Seq Scan on (\w+)`)
	for name, sql := range statements {
		p := explain(t, b, sql, "")
		var tables []string
		for _, m := range scan.FindAllStringSubmatch(p, -1) {
			tables = append(tables, m[1])
		}
		if len(tables) > 0 {
			t.Errorf("%s: the generic plan made on empty tables scans %s whole:\n%s", name, strings.Join(tables, ", "), p)
		}
	}
	// The check above can only fail if EXPLAIN shows scans at all: the
	// custom-plan statements' generic plans do scan.
	scanned := 0
	for _, sql := range custom {
		if scan.MatchString(explain(t, b, sql, "")) {
			scanned++
		}
	}
	if scanned == 0 {
		t.Fatal("no generic plan scanned a table, not even the ones known to: the check proves nothing")
	}
}
