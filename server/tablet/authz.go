package tablet

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

// access authorises the tablet server's requests (Options.Authorizer; requests on
// Options.InternalListener pass unchecked). It owns no state: the ACLs are server/auth's.
type access struct {
	opts accessOptions
}

// accessOptions are the parts of Options access reads.
type accessOptions struct {
	Authorizer       *auth.Authorizer
	InternalListener string
	Catalog          cluster.Catalog
	ServerID         int32
}

// guard wraps a data-plane handler with the authorization Fluss's TabletService applies to
// it (no-op when the authorizer is disabled or the request came on the internal listener):
//
//	PRODUCE_LOG, PUT_KV, LOOKUP with insert_if_not_exists: WRITE on the table (whole request)
//	LIMIT_SCAN, GET_TABLE_STATS: READ; LIST_OFFSETS: DESCRIBE (whole request)
//	INIT_WRITER: WRITE on at least one of the named tables
//	FETCH_LOG, LOOKUP, PREFIX_LOOKUP: READ per table; buckets of a denied table are answered
//	with AUTHORIZATION_EXCEPTION and nothing is read from them.
func (s *access) guard(key wire.APIKey, h wire.Handler) wire.Handler {
	if s.opts.Authorizer == nil {
		return h
	}
	var check func(ctx context.Context, req *wire.Request) (proto.Message, error)
	switch key {
	case wire.ProduceLog:
		check = wholeTable[*flusspb.ProduceLogRequest](s, auth.OpWrite, (*flusspb.ProduceLogRequest).GetTableId)
	case wire.PutKv:
		check = wholeTable[*flusspb.PutKvRequest](s, auth.OpWrite, (*flusspb.PutKvRequest).GetTableId)
	case wire.LimitScan:
		check = wholeTable[*flusspb.LimitScanRequest](s, auth.OpRead, (*flusspb.LimitScanRequest).GetTableId)
	case wire.GetTableStats:
		check = wholeTable[*flusspb.GetTableStatsRequest](s, auth.OpRead, (*flusspb.GetTableStatsRequest).GetTableId)
	case wire.ListOffsets:
		check = wholeTable[*flusspb.ListOffsetsRequest](s, auth.OpDescribe, (*flusspb.ListOffsetsRequest).GetTableId)
	case wire.InitWriter:
		check = s.checkInitWriter
	case wire.FetchLog:
		check = s.checkFetchLog
	case wire.Lookup:
		check = s.checkLookup
	case wire.PrefixLookup:
		check = s.checkPrefixLookup
	default:
		return h
	}
	return func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		if req.IsInternal(s.opts.InternalListener) {
			return h(ctx, req)
		}
		resp, err := check(ctx, req)
		if err != nil || resp != nil {
			return resp, err
		}
		return h(ctx, req)
	}
}

func (s *access) session(req *wire.Request) auth.Session {
	return auth.SessionOf(req, s.opts.InternalListener)
}

// tableOf resolves a table id as Java's authorizeTable does.
func (s *access) tableOf(id int64) (*cluster.TableInfo, error) {
	t, ok := s.opts.Catalog.TableByID(id)
	if !ok {
		return nil, ferr.New(ferr.UnknownTableOrBucketException,
			"This server tablet-server-%d does not know this table ID %d. This may happen when the table metadata cache in the server is not updated yet.",
			s.opts.ServerID, id)
	}
	return t, nil
}

func (s *access) allowedTable(req *wire.Request, op auth.Operation, t *cluster.TableInfo) bool {
	return s.opts.Authorizer.Allowed(s.session(req), op, auth.TableResource(t.Path.Database, t.Path.Table))
}

func deniedTable(op auth.Operation, t *cluster.TableInfo) error {
	return ferr.New(ferr.AuthorizationException, "No permission to %s table %s in database %s", op, t.Path.Table, t.Path.Database)
}

// wholeTable authorises op on the request's one table, failing the whole request.
func wholeTable[M proto.Message](s *access, op auth.Operation, tableID func(M) int64) func(context.Context, *wire.Request) (proto.Message, error) {
	return func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		msg := newMessage[M]()
		if err := req.Decode(msg); err != nil {
			return nil, err
		}
		t, err := s.tableOf(tableID(msg))
		if err != nil {
			return nil, err
		}
		return nil, s.opts.Authorizer.Authorize(s.session(req), op, auth.TableResource(t.Path.Database, t.Path.Table))
	}
}

func newMessage[M proto.Message]() M {
	var zero M
	return zero.ProtoReflect().New().Interface().(M)
}

func (s *access) checkInitWriter(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.InitWriterRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if len(r.GetTablePath()) == 0 {
		return nil, ferr.New(ferr.AuthorizationException, "The request of InitWriter requires non empty table paths for authorization.")
	}
	names := make([]string, 0, len(r.GetTablePath()))
	for _, p := range r.GetTablePath() {
		if s.opts.Authorizer.Allowed(s.session(req), auth.OpWrite, auth.TableResource(p.GetDatabaseName(), p.GetTableName())) {
			return nil, nil
		}
		names = append(names, p.GetDatabaseName()+"."+p.GetTableName())
	}
	return nil, ferr.New(ferr.AuthorizationException, "No %s permission among all the tables: [%s]", auth.OpWrite, strings.Join(names, ", "))
}

// checkFetchLog answers buckets of unknown or denied tables itself. When every table is
// refused it answers the whole request; otherwise it rewrites the request to the allowed
// tables only, and the refused tables' buckets are left out of the answer (the client asks
// for them again, alone, and then gets the per-bucket error).
func (s *access) checkFetchLog(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.FetchLogRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	resp := &flusspb.FetchLogResponse{}
	var allowed []*flusspb.PbFetchLogReqForTable
	for _, tr := range r.TablesReq {
		t, err := s.tableOf(tr.GetTableId())
		if err == nil && s.allowedTable(req, auth.OpRead, t) {
			allowed = append(allowed, tr)
			continue
		}
		if err == nil {
			err = deniedTable(auth.OpRead, t)
		}
		out := &flusspb.PbFetchLogRespForTable{TableId: proto.Int64(tr.GetTableId())}
		for _, br := range tr.BucketsReq {
			bo := &flusspb.PbFetchLogRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
			setBucketError(&bo.ErrorCode, &bo.ErrorMessage, err)
			out.BucketsResp = append(out.BucketsResp, bo)
		}
		resp.TablesResp = append(resp.TablesResp, out)
	}
	if len(allowed) == len(r.TablesReq) {
		return nil, nil
	}
	if len(allowed) == 0 {
		return resp, nil
	}
	r.TablesReq = allowed
	body, err := proto.Marshal(&r)
	if err != nil {
		return nil, fmt.Errorf("re-encode fetch request: %w", err)
	}
	req.Body = body
	return nil, nil
}

// lookupDenied returns the per-bucket error of a single-table read request whose table is
// unknown or denied, nil when the read may go ahead.
func (s *access) lookupDenied(req *wire.Request, tableID int64) error {
	t, err := s.tableOf(tableID)
	if err != nil {
		return err
	}
	if !s.allowedTable(req, auth.OpRead, t) {
		return deniedTable(auth.OpRead, t)
	}
	return nil
}

func (s *access) checkLookup(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.LookupRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if r.GetInsertIfNotExists() {
		t, err := s.tableOf(r.GetTableId())
		if err != nil {
			return nil, err
		}
		return nil, s.opts.Authorizer.Authorize(s.session(req), auth.OpWrite, auth.TableResource(t.Path.Database, t.Path.Table))
	}
	denied := s.lookupDenied(req, r.GetTableId())
	if denied == nil {
		return nil, nil
	}
	resp := &flusspb.LookupResponse{}
	for _, br := range r.BucketsReq {
		bo := &flusspb.PbLookupRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
		setBucketError(&bo.ErrorCode, &bo.ErrorMessage, denied)
		resp.BucketsResp = append(resp.BucketsResp, bo)
	}
	return resp, nil
}

func (s *access) checkPrefixLookup(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.PrefixLookupRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	denied := s.lookupDenied(req, r.GetTableId())
	if denied == nil {
		return nil, nil
	}
	resp := &flusspb.PrefixLookupResponse{}
	for _, br := range r.BucketsReq {
		bo := &flusspb.PbPrefixLookupRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
		setBucketError(&bo.ErrorCode, &bo.ErrorMessage, denied)
		resp.BucketsResp = append(resp.BucketsResp, bo)
	}
	return resp, nil
}
