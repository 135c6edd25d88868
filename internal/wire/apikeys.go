package wire

import "fmt"

// APIKey identifies a Fluss RPC. Keys 0-999 are reserved; client-facing keys start at 1000.
type APIKey int16

// The Fluss API keys a client can send (docs/protocol.md; upstream fluss-rpc ApiKeys.java).
const (
	APIVersions                APIKey = 1000
	CreateDatabase             APIKey = 1001
	DropDatabase               APIKey = 1002
	ListDatabases              APIKey = 1003
	DatabaseExists             APIKey = 1004
	CreateTable                APIKey = 1005
	DropTable                  APIKey = 1006
	GetTableInfo               APIKey = 1007
	ListTables                 APIKey = 1008
	ListPartitionInfos         APIKey = 1009
	TableExists                APIKey = 1010
	GetTableSchema             APIKey = 1011
	GetMetadata                APIKey = 1012
	ProduceLog                 APIKey = 1014
	FetchLog                   APIKey = 1015
	PutKv                      APIKey = 1016
	Lookup                     APIKey = 1017
	NotifyLeaderAndIsr         APIKey = 1018 // server to server (coordinator to tablet server)
	StopReplica                APIKey = 1019 // server to server
	ControlledShutdown         APIKey = 1043 // server to server (tablet server to coordinator)
	ListOffsets                APIKey = 1021
	GetLatestKvSnapshots       APIKey = 1023
	GetKvSnapshotMetadata      APIKey = 1024
	GetFilesystemSecurityToken APIKey = 1025
	InitWriter                 APIKey = 1026
	GetLakeSnapshot            APIKey = 1032
	LimitScan                  APIKey = 1033
	PrefixLookup               APIKey = 1034
	GetDatabaseInfo            APIKey = 1035
	CreatePartition            APIKey = 1036
	DropPartition              APIKey = 1037
	Authenticate               APIKey = 1038
	CreateAcls                 APIKey = 1039
	ListAcls                   APIKey = 1040
	DropAcls                   APIKey = 1041
	AlterTable                 APIKey = 1044
	DescribeClusterConfigs     APIKey = 1045
	AlterClusterConfigs        APIKey = 1046
	AddServerTag               APIKey = 1047
	RemoveServerTag            APIKey = 1048
	Rebalance                  APIKey = 1049
	ListRebalanceProgress      APIKey = 1050
	CancelRebalance            APIKey = 1051
	RegisterProducerOffsets    APIKey = 1053
	GetProducerOffsets         APIKey = 1054
	DeleteProducerOffsets      APIKey = 1055
	AcquireKvSnapshotLease     APIKey = 1056
	ReleaseKvSnapshotLease     APIKey = 1057
	DropKvSnapshotLease        APIKey = 1058
	GetTableStats              APIKey = 1059
	AlterDatabase              APIKey = 1060
	ScanKv                     APIKey = 1061
	GetClusterHealth           APIKey = 1062
	ListRemoteLogManifests     APIKey = 1063
	ListKvSnapshots            APIKey = 1064

	// ResignLeadership is Strom's own, server to server (tablet server to coordinator): a
	// leader whose replica of one bucket is corrupt hands that leadership to an in-sync
	// replica (server/control/shutdown, resign.go). Fluss has no such key; 1900 stays clear
	// of Fluss's range.
	ResignLeadership APIKey = 1900
)

var apiKeyNames = map[APIKey]string{
	APIVersions:                "API_VERSIONS",
	CreateDatabase:             "CREATE_DATABASE",
	DropDatabase:               "DROP_DATABASE",
	ListDatabases:              "LIST_DATABASES",
	DatabaseExists:             "DATABASE_EXISTS",
	CreateTable:                "CREATE_TABLE",
	DropTable:                  "DROP_TABLE",
	GetTableInfo:               "GET_TABLE_INFO",
	ListTables:                 "LIST_TABLES",
	ListPartitionInfos:         "LIST_PARTITION_INFOS",
	TableExists:                "TABLE_EXISTS",
	GetTableSchema:             "GET_TABLE_SCHEMA",
	GetMetadata:                "GET_METADATA",
	ProduceLog:                 "PRODUCE_LOG",
	FetchLog:                   "FETCH_LOG",
	PutKv:                      "PUT_KV",
	Lookup:                     "LOOKUP",
	NotifyLeaderAndIsr:         "NOTIFY_LEADER_AND_ISR",
	StopReplica:                "STOP_REPLICA",
	ControlledShutdown:         "CONTROLLED_SHUTDOWN",
	ListOffsets:                "LIST_OFFSETS",
	GetLatestKvSnapshots:       "GET_LATEST_KV_SNAPSHOTS",
	GetKvSnapshotMetadata:      "GET_KV_SNAPSHOT_METADATA",
	GetFilesystemSecurityToken: "GET_FILESYSTEM_SECURITY_TOKEN",
	InitWriter:                 "INIT_WRITER",
	GetLakeSnapshot:            "GET_LAKE_SNAPSHOT",
	LimitScan:                  "LIMIT_SCAN",
	PrefixLookup:               "PREFIX_LOOKUP",
	GetDatabaseInfo:            "GET_DATABASE_INFO",
	CreatePartition:            "CREATE_PARTITION",
	DropPartition:              "DROP_PARTITION",
	Authenticate:               "AUTHENTICATE",
	CreateAcls:                 "CREATE_ACLS",
	ListAcls:                   "LIST_ACLS",
	DropAcls:                   "DROP_ACLS",
	AlterTable:                 "ALTER_TABLE",
	DescribeClusterConfigs:     "DESCRIBE_CLUSTER_CONFIGS",
	AlterClusterConfigs:        "ALTER_CLUSTER_CONFIGS",
	AddServerTag:               "ADD_SERVER_TAG",
	RemoveServerTag:            "REMOVE_SERVER_TAG",
	Rebalance:                  "REBALANCE",
	ListRebalanceProgress:      "LIST_REBALANCE_PROGRESS",
	CancelRebalance:            "CANCEL_REBALANCE",
	RegisterProducerOffsets:    "REGISTER_PRODUCER_OFFSETS",
	GetProducerOffsets:         "GET_PRODUCER_OFFSETS",
	DeleteProducerOffsets:      "DELETE_PRODUCER_OFFSETS",
	AcquireKvSnapshotLease:     "ACQUIRE_KV_SNAPSHOT_LEASE",
	ReleaseKvSnapshotLease:     "RELEASE_KV_SNAPSHOT_LEASE",
	DropKvSnapshotLease:        "DROP_KV_SNAPSHOT_LEASE",
	GetTableStats:              "GET_TABLE_STATS",
	AlterDatabase:              "ALTER_DATABASE",
	ScanKv:                     "SCAN_KV",
	GetClusterHealth:           "GET_CLUSTER_HEALTH",
	ListRemoteLogManifests:     "LIST_REMOTE_LOG_MANIFESTS",
	ListKvSnapshots:            "LIST_KV_SNAPSHOTS",
	ResignLeadership:           "RESIGN_LEADERSHIP",
}

// String returns the Fluss name of the key, e.g. GET_METADATA.
func (k APIKey) String() string {
	if n, ok := apiKeyNames[k]; ok {
		return n
	}
	return fmt.Sprintf("API_%d", int16(k))
}

// VersionRange is the inclusive range of versions of one API a server accepts.
type VersionRange struct{ Min, Max int16 }
