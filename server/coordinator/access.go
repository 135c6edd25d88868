package coordinator

import (
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

// access authorises requests as a Fluss coordinator does: with an authorizer
// (authorizer.enabled) every request that does not arrive on the internal listener
// (internal.listener.name) is checked. The zero access allows everything. Every service that
// checks requests holds one; it is a value, shared by all of them.
type access struct {
	authorizer *auth.Authorizer // nil: authorization disabled
	internal   string           // the internal listener's name
}

func (a access) session(req *wire.Request) auth.Session {
	return auth.SessionOf(req, a.internal)
}

// checks reports whether requests on req's listener are authorised: the authorizer is
// enabled and the listener is not the internal one.
func (a access) checks(req *wire.Request) bool {
	return a.authorizer != nil && !req.IsInternal(a.internal)
}

// authorize returns AUTHORIZATION_EXCEPTION unless req may perform op on r.
func (a access) authorize(req *wire.Request, op auth.Operation, r auth.Resource) error {
	if !a.checks(req) {
		return nil
	}
	return a.authorizer.Authorize(a.session(req), op, r)
}

// allowed reports whether req may perform op on r.
func (a access) allowed(req *wire.Request, op auth.Operation, r auth.Resource) bool {
	return !a.checks(req) || a.authorizer.Allowed(a.session(req), op, r)
}

// tableByID looks a table up by id (the part of the catalog authorizeTableID needs).
type tableByID interface {
	TableByID(id int64) (*cluster.TableInfo, bool)
}

// authorizeTableID authorises op on the table with the given id; an unknown table is
// TABLE_NOT_EXIST, as Java's lookup of the table path fails first.
func (a access) authorizeTableID(req *wire.Request, tables tableByID, op auth.Operation, tableID int64) error {
	if !a.checks(req) {
		return nil
	}
	t, ok := tables.TableByID(tableID)
	if !ok {
		return ferr.New(ferr.TableNotExist, "The table id %d does not exist.", tableID)
	}
	return a.authorize(req, op, tableResource(t.Path))
}

// tablePathRequest is a request that names one table by its path.
type tablePathRequest interface {
	proto.Message
	GetTablePath() *flusspb.PbTablePath
}

// decodeForTable decodes req into r and authorizes op on the table r names: the prologue of
// every request scoped to one table path. It returns the path.
func (a access) decodeForTable(req *wire.Request, r tablePathRequest, op auth.Operation) (cluster.TablePath, error) {
	if err := req.Decode(r); err != nil {
		return cluster.TablePath{}, err
	}
	path := tablePathOf(r.GetTablePath())
	return path, a.authorize(req, op, tableResource(path))
}

// tableReader finds an existing table by the path a request names, TABLE_NOT_EXIST when
// there is none (Catalog.table).
type tableReader interface {
	table(p *flusspb.PbTablePath) (*cluster.TableInfo, error)
}

// decodeForTableInfo is decodeForTable for a request about an existing table, which it
// returns.
func (a access) decodeForTableInfo(req *wire.Request, tables tableReader, r tablePathRequest, op auth.Operation) (*cluster.TableInfo, error) {
	if _, err := a.decodeForTable(req, r, op); err != nil {
		return nil, err
	}
	return tables.table(r.GetTablePath())
}

func tableResource(p cluster.TablePath) auth.Resource { return auth.TableResource(p.Database, p.Table) }

func tablePathOf(p *flusspb.PbTablePath) cluster.TablePath {
	return cluster.TablePath{Database: p.GetDatabaseName(), Table: p.GetTableName()}
}

func pbTablePath(p cluster.TablePath) *flusspb.PbTablePath {
	return &flusspb.PbTablePath{DatabaseName: proto.String(p.Database), TableName: proto.String(p.Table)}
}

// setError fills an error_code/error_message pair from err.
func setError(code **int32, msg **string, err error) {
	*code = proto.Int32(int32(ferr.CodeOf(err)))
	if m := ferr.MessageOf(err); m != "" {
		*msg = proto.String(wire.Sanitize(m))
	}
}
