package postgres

// PartitionLockKey is partitionLockKey, for tests that hold the partition
// maintenance lease.
var PartitionLockKey = partitionLockKey
