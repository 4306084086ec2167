package actor

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// A dead letter keeps only its error's text (the schema has no error-kind
// column), and the process that reads it may not be the one that failed.
// So the cause of a *DeadLetterError is recovered from that text: every
// sentinel whose text it contains, and the typed errors whose texts have a
// fixed shape. The texts of the errors below are therefore part of the
// contract: change one only together with its pattern here.

// sentinels are the errors a stored text can name; ErrDeadLetter is left
// out (the DeadLetterError itself matches it).
var sentinels = []error{
	ErrUnknownType, ErrUnknownMessage, ErrInvalidArguments, ErrInvalidID, ErrTooLarge, ErrMailboxFull,
	ErrLostActivation, ErrAskTimeout, ErrForbidden, ErrNewerStateVersion, ErrMigration, ErrQueryMutated,
	ErrActorContext, ErrNotFound, ErrInvalidDefinition, ErrClosed,
}

// refPattern matches Ref.String(): the type, a slash and the quoted ID.
const refPattern = `([A-Za-z0-9._:-]*/"(?:[^"\\]|\\.)*")`

// The "what" of a LimitError or JSONError names a value ("result",
// "effect arguments"); it never holds a colon or a quote, which keeps a
// match from starting at an outer error's "actor: " prefix.
var (
	limitText     = regexp.MustCompile(`actor: ([^:"]+?) is (\d+) bytes, over the limit of (\d+)`)
	jsonText      = regexp.MustCompile(`actor: invalid ([^:"]+?): (.*)`)
	mailboxText   = regexp.MustCompile(`actor: mailbox of ` + refPattern + ` is full \((\d+) unfinished messages\)`)
	forbiddenText = regexp.MustCompile(`actor: (message|query|destroy|subscription|administration) on ` + refPattern + ` forbidden: (.*)`)
)

// causesFromText recovers the errors a stored error text names.
func causesFromText(text string) []error {
	var out []error
	if m := limitText.FindStringSubmatch(text); m != nil {
		size, _ := strconv.Atoi(m[2])
		limit, _ := strconv.Atoi(m[3])
		out = append(out, &LimitError{What: m[1], Size: size, Limit: limit})
	}
	if m := jsonText.FindStringSubmatch(text); m != nil && !isSentinelText(m[0], ErrInvalidID, ErrInvalidDefinition) {
		out = append(out, &JSONError{What: m[1], Reason: m[2]})
	}
	if m := mailboxText.FindStringSubmatch(text); m != nil {
		if ref, ok := parseRef(m[1]); ok {
			limit, _ := strconv.Atoi(m[2])
			out = append(out, &MailboxFullError{Ref: ref, Limit: limit})
		}
	}
	if m := forbiddenText.FindStringSubmatch(text); m != nil {
		if ref, ok := parseRef(m[2]); ok {
			out = append(out, &ForbiddenError{Operation: Operation(m[1]), Ref: ref, Err: errors.New(m[3])})
		}
	}
	for _, s := range sentinels {
		if strings.Contains(text, s.Error()) {
			out = append(out, s)
		}
	}
	return out
}

// isSentinelText reports whether match begins with one of the sentinels'
// texts: "actor: invalid actor ID: ..." has a JSONError's shape but is not
// one.
func isSentinelText(match string, errs ...error) bool {
	for _, e := range errs {
		if strings.HasPrefix(match, e.Error()+":") {
			return true
		}
	}
	return false
}

// parseRef reverses Ref.String.
func parseRef(s string) (Ref, bool) {
	typ, quoted, ok := strings.Cut(s, "/")
	if !ok {
		return Ref{}, false
	}
	id, err := strconv.Unquote(quoted)
	if err != nil {
		return Ref{}, false
	}
	return Ref{Type: typ, ID: id}, true
}
