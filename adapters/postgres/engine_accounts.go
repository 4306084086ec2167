package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
)

// The local accounts' part of the engine store on PostgreSQL: users and
// their browser sessions. Writes run in a transaction of their own begun
// as Backend.Begin begins them (an account's change and the sessions it
// ends commit together); reads run on a pooled connection outside any
// transaction. A failed sign-in's UPDATE waits for a concurrent one's row
// lock and then counts on from its result (READ COMMITTED), so each
// failure is counted.

// UserInsert implements ixstore.Store.
func (s engineStore) UserInsert(ctx context.Context, p *ixstore.UserInsertParams) (bool, error) {
	args, err := sqlrow.IXUserArgs(&p.User)
	if err != nil {
		return false, err
	}
	n, err := s.writeOne(ctx, "insert an account", `INSERT INTO ductus_ix_users`+sqlrow.IXUserInsertValues+` ON CONFLICT (name) DO NOTHING`, args...)
	return n > 0, err
}

// UserUpdate implements ixstore.Store.
func (s engineStore) UserUpdate(ctx context.Context, p *ixstore.UserUpdateParams) (bool, error) {
	args, err := sqlrow.IXUserUpdateArgs(p)
	if err != nil {
		return false, err
	}
	var n int64
	err = s.engineTx(ctx, nil, func(tx querier) error {
		tag, err := tx.Exec(ctx, Rebind(sqlrow.IXUserUpdate), args...)
		if n = tag.RowsAffected(); err != nil || n == 0 || !p.Disabled {
			return classify("update an account", err)
		}
		_, err = tx.Exec(ctx, Rebind(sqlrow.IXSessionDeleteUser), p.Name, "")
		return classify("end a disabled account's sessions", err)
	})
	return n > 0, err
}

// UserSetPassword implements ixstore.Store.
func (s engineStore) UserSetPassword(ctx context.Context, p *ixstore.UserSetPasswordParams) (bool, error) {
	set, end, err := sqlrow.IXUserSetPasswordArgs(p)
	if err != nil {
		return false, err
	}
	var n int64
	err = s.engineTx(ctx, nil, func(tx querier) error {
		tag, err := tx.Exec(ctx, Rebind(sqlrow.IXUserSetPassword), set...)
		if n = tag.RowsAffected(); err != nil || n == 0 {
			return classify("set a password", err)
		}
		_, err = tx.Exec(ctx, Rebind(sqlrow.IXSessionDeleteUser), end...)
		return classify("end an account's other sessions", err)
	})
	return n > 0, err
}

// UserLoginFailed implements ixstore.Store: the count the update returns
// is 0 exactly when it locked the account.
func (s engineStore) UserLoginFailed(ctx context.Context, p *ixstore.UserLoginFailedParams) (bool, error) {
	args, err := sqlrow.IXUserLoginFailedArgs(p)
	if err != nil {
		return false, err
	}
	locked := false
	err = s.engineTx(ctx, nil, func(tx querier) error {
		var count int
		err := tx.QueryRow(ctx, Rebind(sqlrow.IXUserLoginFailed+` RETURNING failed_logins`), args...).Scan(&count)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		locked = err == nil && count == 0
		return classify("count a failed sign-in", err)
	})
	return locked, err
}

// UserLoginSucceeded implements ixstore.Store.
func (s engineStore) UserLoginSucceeded(ctx context.Context, p *ixstore.UserLoginSucceededParams) error {
	_, err := s.writeOne(ctx, "clear failed sign-ins", sqlrow.IXUserLoginSucceeded, p.Name)
	return err
}

// SessionInsert implements ixstore.Store.
func (s engineStore) SessionInsert(ctx context.Context, p *ixstore.SessionInsertParams) error {
	args, err := sqlrow.IXSessionArgs(&p.Session)
	if err != nil {
		return err
	}
	_, err = s.writeOne(ctx, "insert a session", sqlrow.IXSessionInsert, args...)
	return err
}

// SessionTouch implements ixstore.Store.
func (s engineStore) SessionTouch(ctx context.Context, p *ixstore.SessionTouchParams) error {
	args, err := sqlrow.IXSessionTouchArgs(p)
	if err != nil {
		return err
	}
	_, err = s.writeOne(ctx, "touch a session", sqlrow.IXSessionTouch, args...)
	return err
}

// SessionDelete implements ixstore.Store.
func (s engineStore) SessionDelete(ctx context.Context, p *ixstore.SessionDeleteParams) (int64, error) {
	st, err := sqlrow.IXSessionDelete(p)
	if err != nil {
		return 0, err
	}
	return s.writeOne(ctx, "end sessions", st.SQL, st.Args...)
}

// SessionPrune implements ixstore.Store.
func (s engineStore) SessionPrune(ctx context.Context, p *ixstore.SessionPruneParams) (int64, error) {
	st := sqlrow.IXSessionPrune(p)
	if st.SQL == "" {
		return 0, nil
	}
	return s.writeOne(ctx, "prune sessions", st.SQL, st.Args...)
}

// writeOne runs one statement (? placeholders) in a transaction of its
// own and returns the rows it changed.
func (s engineStore) writeOne(ctx context.Context, op, query string, args ...any) (int64, error) {
	var n int64
	err := s.engineTx(ctx, nil, func(tx querier) error {
		tag, err := tx.Exec(ctx, Rebind(query), args...)
		n = tag.RowsAffected()
		return classify(op, err)
	})
	return n, err
}
