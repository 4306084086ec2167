package access

// Rule is what one API operation needs.
type Rule struct {
	// Public operations need no credentials (health checks, the API's own
	// document).
	Public bool
	// Role is the least role that may call it.
	Role Role
	// Perm, when set, is needed too.
	Perm Perm
	// Audited operations write an audit row before they answer, even
	// when they only read (payloads, the audit log itself is not).
	Audited bool
}

// Table is the access table: every operation of the API (by the
// operationId of integration/api/openapi.yaml) and what it needs. The API
// refuses an operation that has no row, and the API's tests fail for an
// operation of the document missing here or a row naming none.
var Table = map[string]Rule{
	"getHealth":         {Public: true},
	"getOpenAPI":        {Public: true},
	"getEngine":         {Role: Viewer},
	"whoAmI":            {Role: Viewer},
	"listInterfaces":    {Role: Viewer},
	"listMessages":      {Role: Viewer},
	"getMessage":        {Role: Viewer},
	"getMessagePayload": {Role: Viewer, Perm: Payloads, Audited: true},
	"resendMessage":     {Role: Operator, Audited: true},
	"dismissMessage":    {Role: Operator, Audited: true},
	"pauseDestination":  {Role: Operator, Audited: true},
	"resumeDestination": {Role: Operator, Audited: true},
	"getDrain":          {Role: Viewer},
	"getEvents":         {Role: Viewer},
	"startDrain":        {Role: Operator, Audited: true},
	"stopDrain":         {Role: Operator, Audited: true},
	"getMetrics":        {Role: Viewer},
	"listAudit":         {Role: Viewer, Perm: Audit},
	"listTokens":        {Role: Admin},
	"createToken":       {Role: Admin, Audited: true},
	"revokeToken":       {Role: Admin, Audited: true},
}
