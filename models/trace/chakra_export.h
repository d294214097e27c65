// Step program -> Chakra execution traces (one `<name>.<rank>.et` per rank), the format
// import_chakra reads and ASTRA-sim replays. The encoding rules are stated in
// chakra_export.cpp. Errors are TraceErrors naming the directory, rank and instruction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/replay/step_program.h"

namespace ct::trace {

// comm_size of every exported collective is a multiple of this: of every preferred-dataset-splits
// value of 1..64 (ASTRA-sim's shipped system configurations use 1 and 4).
inline constexpr int64_t kAstraSizeMultiple = 64;

struct ChakraExportOptions {
  std::string name = "trace";   // files are <name>.<rank>.et; characters other than A-Z a-z 0-9 _ - become _
  bool comm_group_file = true;  // also write comm_group.json (ASTRA-sim --comm-group-configuration)
  int64_t size_multiple = kAstraSizeMultiple;  // collectives' comm_size is rounded up to a multiple
};

struct ChakraExportResult {
  std::string directory, name;
  std::vector<std::string> files;  // per rank
  std::string comm_group_file;     // empty when not written
  int ranks = 0, steps = 0;
  int64_t nodes = 0, computes = 0, sends = 0, recvs = 0, collectives = 0;  // nodes by type, all ranks
  int process_groups = 0;
  int64_t bytes = 0;  // written, .et files
};

// Rank r's file: GlobalMetadata (version 0.0.4) then one Node per instruction, each message
// prefixed by its varint length. Throws TraceError when the program cannot be exported
// (folded, a rank not on GPU r, or an inconsistent send/receive/group).
std::string encode_chakra_rank(const replay::StepProgram& program, int rank);

// Writes every rank's file (and comm_group.json) into `directory`, created when missing. A
// directory that already holds .et files is an error (the importer reads all of them).
ChakraExportResult export_chakra(const replay::StepProgram& program, const std::string& directory,
                                 const ChakraExportOptions& options = {});

}  // namespace ct::trace
