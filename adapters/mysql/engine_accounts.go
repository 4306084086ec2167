package mysql

import (
	"context"
	"database/sql"
	"errors"

	"github.com/ductus/ductus/adapters/internal/sqlrow"
	"github.com/ductus/ductus/integration/ixstore"
)

// The local accounts' part of the engine store on MySQL/MariaDB: users
// and their browser sessions. Writes run in a READ COMMITTED transaction
// of their own (an account's change and the sessions it ends commit
// together); reads run on the caller pool outside any transaction. A
// failed sign-in's UPDATE waits for a concurrent one's row lock and then
// counts on from its result, so each failure is counted.
//
// The caller pool's affected rows are the rows changed, not matched
// (unless the user's DSN asks for found rows): an update that writes what
// a row holds already reports none, so "no such account" is asked of the
// table instead (userExists).

// UserInsert implements ixstore.Store. INSERT IGNORE would also swallow
// errors other than the duplicate key, and ON DUPLICATE KEY UPDATE's
// affected rows could not tell a duplicate from an insert on a DSN with
// found rows; a plain insert refused for its duplicate key changes
// nothing and leaves the transaction usable.
func (s engineStore) UserInsert(ctx context.Context, p *ixstore.UserInsertParams) (bool, error) {
	args, err := sqlrow.IXUserArgs(&p.User)
	if err != nil {
		return false, err
	}
	inserted := false
	err = s.engineTx(ctx, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO ductus_ix_users`+sqlrow.IXUserInsertValues, args...)
		if isDuplicate(err) {
			return nil
		}
		inserted = err == nil
		return classify("insert an account", err)
	})
	return inserted && err == nil, err
}

// UserUpdate implements ixstore.Store.
func (s engineStore) UserUpdate(ctx context.Context, p *ixstore.UserUpdateParams) (bool, error) {
	args, err := sqlrow.IXUserUpdateArgs(p)
	if err != nil {
		return false, err
	}
	found := false
	err = s.engineTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		if found, err = updateUser(ctx, tx, "update an account", sqlrow.IXUserUpdate, args, p.Name); err != nil || !found || !p.Disabled {
			return err
		}
		_, err = tx.ExecContext(ctx, sqlrow.IXSessionDeleteUser, p.Name, "")
		return classify("end a disabled account's sessions", err)
	})
	return found && err == nil, err
}

// UserSetPassword implements ixstore.Store.
func (s engineStore) UserSetPassword(ctx context.Context, p *ixstore.UserSetPasswordParams) (bool, error) {
	set, end, err := sqlrow.IXUserSetPasswordArgs(p)
	if err != nil {
		return false, err
	}
	found := false
	err = s.engineTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		if found, err = updateUser(ctx, tx, "set a password", sqlrow.IXUserSetPassword, set, p.Name); err != nil || !found {
			return err
		}
		_, err = tx.ExecContext(ctx, sqlrow.IXSessionDeleteUser, end...)
		return classify("end an account's other sessions", err)
	})
	return found && err == nil, err
}

// updateUser runs an update of the account name in tx and reports
// whether there is such an account.
func updateUser(ctx context.Context, tx *sql.Tx, op, query string, args []any, name string) (bool, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return false, classify(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil || n > 0 {
		return n > 0, classify(op, err)
	}
	return userExists(ctx, tx, op, name)
}

// userExists reports whether tx sees an account named name.
func userExists(ctx context.Context, tx *sql.Tx, op, name string) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM ductus_ix_users WHERE name = ?`, name).Scan(&n)
	return n > 0, classify(op, err)
}

// UserLoginFailed implements ixstore.Store. MySQL has no UPDATE ...
// RETURNING: the count is read back in the transaction, which holds the
// row's lock from the update on, so it is this failure's count (0 exactly
// when it locked the account).
func (s engineStore) UserLoginFailed(ctx context.Context, p *ixstore.UserLoginFailedParams) (bool, error) {
	args, err := sqlrow.IXUserLoginFailedArgs(p)
	if err != nil {
		return false, err
	}
	locked := false
	err = s.engineTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, sqlrow.IXUserLoginFailed, args...); err != nil {
			return classify("count a failed sign-in", err)
		}
		var count int
		err := tx.QueryRowContext(ctx, sqlrow.IXUserLoginCount, p.Name).Scan(&count)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		locked = err == nil && count == 0
		return classify("count a failed sign-in", err)
	})
	return locked && err == nil, err
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

// SessionDelete implements ixstore.Store. A delete's affected rows are
// the rows deleted, found rows or not.
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

// writeOne runs one statement in a transaction of its own and returns the
// rows it affected.
func (s engineStore) writeOne(ctx context.Context, op, query string, args ...any) (int64, error) {
	var n int64
	err := s.engineTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return classify(op, err)
		}
		n, err = res.RowsAffected()
		return classify(op, err)
	})
	return n, err
}
