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
	// DuringPasswordChange operations are open to a session that must
	// change its password first (who am I, sign out, change it).
	DuringPasswordChange bool
}

// Table is the access table: every operation of the API (by the
// operationId of integration/api/openapi.yaml) and what it needs. The API
// refuses an operation that has no row, and the API's tests fail for an
// operation of the document missing here or a row naming none.
var Table = map[string]Rule{
	"getHealth":         {Public: true},
	"getOpenAPI":        {Public: true},
	"getEngine":         {Role: Viewer},
	"whoAmI":            {Role: Viewer, DuringPasswordChange: true},
	"listInterfaces":    {Role: Viewer},
	"listMessages":      {Role: Viewer},
	"getHotspots":       {Role: Viewer},
	"getMessage":        {Role: Viewer},
	"listQuarantine":    {Role: Viewer},
	"getMessagePayload": {Role: Viewer, Perm: Payloads, Audited: true},
	"resendMessage":     {Role: Operator, Audited: true},
	"dismissMessage":    {Role: Operator, Audited: true},
	"bulkResend":        {Role: Operator, Audited: true},
	"bulkDismiss":       {Role: Operator, Audited: true},
	// Editing shows the payload and writes a new one: the payloads
	// permission as well.
	"editMessage":       {Role: Operator, Perm: Payloads, Audited: true},
	"pauseDestination":  {Role: Operator, Audited: true},
	"resumeDestination": {Role: Operator, Audited: true},
	"getDrain":          {Role: Viewer},
	"getEvents":         {Role: Viewer},
	"startDrain":        {Role: Operator, Audited: true},
	"stopDrain":         {Role: Operator, Audited: true},
	"getMetrics":        {Role: Viewer},
	"listAudit":         {Role: Viewer, Perm: Audit},
	"exportAudit":       {Role: Viewer, Perm: Audit, Audited: true},
	"listTokens":        {Role: Admin},
	"createToken":       {Role: Admin, Audited: true},
	"revokeToken":       {Role: Admin, Audited: true},
	// Sign-in is public: the credentials are in the body. Its audit row
	// is written by Login, whatever the outcome.
	"createSession":       {Public: true},
	"deleteSession":       {Role: Viewer, Audited: true, DuringPasswordChange: true},
	"deleteOtherSessions": {Role: Viewer, Audited: true},
	"changePassword":      {Role: Viewer, Audited: true, DuringPasswordChange: true},
	"listUsers":           {Role: Admin},
	"createUser":          {Role: Admin, Audited: true},
	"updateUser":          {Role: Admin, Audited: true},
	"resetPassword":       {Role: Admin, Audited: true},
}
