// Typed description of the storage system a job checkpoints to and reads its data from.
//
// Bandwidths are aggregates of the whole file system (parallel FS or object store). A
// "client" is one node (one mount / one storage NIC path); a per-client limit of 0 means
// the client side never limits. Capacity 0 means unlimited.
#pragma once

#include <cstdint>

#include "sim/units.h"

namespace ct::storage {

struct StorageSpec {
  sim::Bandwidth read;              // aggregate read bandwidth     (cluster.storage.read)
  sim::Bandwidth write;             // aggregate write bandwidth    (cluster.storage.write)
  sim::Duration metadata_latency;   // one metadata operation       (cluster.storage.metadata_latency)
  sim::Bandwidth per_client_read;   // per node; 0 = unlimited
  sim::Bandwidth per_client_write;  // per node; 0 = unlimited
  int64_t capacity_bytes = 0;       // 0 = unlimited
};

// Where the job runs, as far as checkpoint I/O is concerned.
struct HostSpec {
  int gpus_per_node = 8;
  sim::Bandwidth pcie_to_host;  // one GPU's device-to-host copy bandwidth (cluster.pcie)
};

}  // namespace ct::storage
