#include <gtest/gtest.h>

#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/model_presets.h"
#include "models/scenario/param_table.h"
#include "models/scenario/schema.h"

using namespace ct::scenario;
using nlohmann::json;

namespace {

json minimal() {
  return json::parse(R"({
    "cluster": {"nodes": 4},
    "training_job": {
      "model": {"layers": 4, "hidden": 1024, "heads": 16, "seq_length": 1024, "vocab": 32000},
      "global_batch_size": 32,
      "parallelism": {"tensor_parallel": 8, "pipeline_parallel": 2, "data_parallel": 2}
    }
  })");
}

// Runs load + checks and returns the problems (empty when valid).
std::vector<std::string> problems_of(const json& doc) {
  try {
    Config c = to_config(doc);
    check_config(c);
  } catch (const ScenarioError& e) {
    return e.problems();
  }
  return {};
}

::testing::AssertionResult has_problem(const json& doc, const std::string& needle1,
                                       const std::string& needle2 = "") {
  const auto problems = problems_of(doc);
  for (const auto& p : problems) {
    if (p.find(needle1) != std::string::npos && p.find(needle2) != std::string::npos)
      return ::testing::AssertionSuccess();
  }
  std::string all;
  for (const auto& p : problems) all += "\n  " + p;
  return ::testing::AssertionFailure()
         << "no problem mentions '" << needle1 << "' and '" << needle2 << "'; got:" << all;
}

}  // namespace

TEST(Loader, MinimalScenarioGetsEveryDefault) {
  Config c = to_config(minimal());
  check_config(c);
  EXPECT_EQ(c.cluster.gpu, "H100-SXM");
  EXPECT_EQ(c.cluster.gpus_per_node, 8);
  EXPECT_EQ(c.cluster.fabric.switch_radix, 128);
  EXPECT_EQ(c.network.mode, "flow");
  EXPECT_EQ(c.network.ecn.kmin.n, 0);  // scaled with each port's speed
  EXPECT_EQ(c.network.dcqcn.profile, "hpcc-ns3-paper");
  EXPECT_EQ(c.training_job.runtime.collective_timeout, ct::sim::Duration::s(1800));
  EXPECT_EQ(c.training_job.model.activation, "gelu");
}

TEST(Loader, UnknownKeysAreErrorsWithASuggestion) {
  json doc = minimal();
  doc["cluster"]["fabirc"] = json::object();
  EXPECT_TRUE(has_problem(doc, "cluster.fabirc: unknown key", "did you mean 'cluster.fabric'"));
  doc = minimal();
  doc["training_job"]["model"]["hiden"] = 4;
  EXPECT_TRUE(has_problem(doc, "training_job.model.hiden", "training_job.model.hidden"));
}

TEST(Loader, WrongTypesMissingUnitsAndRangesNameTheKeyAndValue) {
  json doc = minimal();
  doc["cluster"]["nic"] = 400;
  EXPECT_TRUE(has_problem(doc, "cluster.nic: got 400", "with its unit"));
  doc = minimal();
  doc["cluster"]["nic"] = "400";
  EXPECT_TRUE(has_problem(doc, "cluster.nic", "missing unit"));
  doc = minimal();
  doc["cluster"]["nodes"] = -3;
  EXPECT_TRUE(has_problem(doc, "cluster.nodes: got -3", "expected a whole number >= 0"));
  doc = minimal();
  doc["cluster"]["nodes"] = 2.5;
  EXPECT_TRUE(has_problem(doc, "cluster.nodes: got 2.5", "whole number"));
  doc = minimal();
  doc["network"]["mode"] = "quantum";
  EXPECT_TRUE(has_problem(doc, "network.mode: got \"quantum\"", "analytical, flow, packet"));
  doc = minimal();
  doc["network"]["ecn"]["pmax"] = 1.5;
  EXPECT_TRUE(has_problem(doc, "network.ecn.pmax", "fraction between 0 and 1"));
  doc = minimal();
  doc["cluster"]["fabric"] = 3;
  EXPECT_TRUE(has_problem(doc, "cluster.fabric: got 3", "expected a section"));
  doc = minimal();
  doc["cluster"]["nvlink_latency"] = "-1us";
  EXPECT_TRUE(has_problem(doc, "cluster.nvlink_latency", "negative"));
}

TEST(Loader, MissingRequiredKeysAndWorkloadSection) {
  json doc = minimal();
  doc["training_job"]["model"].erase("hidden");
  EXPECT_TRUE(has_problem(doc, "training_job.model.hidden: missing"));
  doc = minimal();
  doc.erase("training_job");
  EXPECT_TRUE(has_problem(doc, "exactly one of training_job, traffic, trace"));
}

TEST(Loader, InconsistentLayoutsNameTheKeysAndTheRule) {
  json doc = minimal();
  doc["training_job"]["parallelism"]["data_parallel"] = 4;  // 8 x 2 x 4 = 64 > 32 GPUs
  EXPECT_TRUE(has_problem(doc, "data_parallel", "32"));
  doc = minimal();
  doc["training_job"]["model"]["heads"] = 12;  // TP 8 does not divide 12
  EXPECT_TRUE(has_problem(doc, "training_job.model.heads", "tensor_parallel"));
  doc = minimal();
  doc["training_job"]["model"]["layers"] = 1;  // PP 2 x 2 chunks: 4 virtual stages need 2 layers + 2
  doc["training_job"]["parallelism"]["virtual_pipeline"] = 2;
  EXPECT_TRUE(has_problem(doc, "training_job.model.layers", "pipeline_parallel"));
  doc = minimal();
  doc["cluster"]["gpu"] = "Z100";
  EXPECT_TRUE(has_problem(doc, "Z100", "H100-SXM"));
}

TEST(Loader, FabricThatCannotBeBuiltIsAnErrorNamingTheLimit) {
  json doc = minimal();
  doc["cluster"]["nodes"] = 1100;  // 8,800 NICs > 8,192 for 2 tiers at radix 128
  doc["cluster"]["fabric"]["tiers"] = 2;
  EXPECT_TRUE(has_problem(doc, "cluster.fabric.tiers", "8192"));
  doc = minimal();
  doc["cluster"]["nic"] = "0Gbps";
  EXPECT_FALSE(problems_of(doc).empty());
}

TEST(Loader, DataParallelZeroTakesTheRestAfterHotSpares) {
  json doc = minimal();
  doc["cluster"]["nodes"] = 100;
  doc["training_job"]["global_batch_size"] = 98;
  doc["training_job"]["parallelism"]["data_parallel"] = 0;
  doc["recovery"] = {{"hot_spares", 0.02}};
  Config c = to_config(doc);
  check_config(c);
  EXPECT_EQ(c.training_job.parallelism.data_parallel, 49);  // 98 nodes x 8 / (TP 8 x PP 2)
}

TEST(Loader, YamlReadsLikeJson) {
  const char* yaml = R"(
cluster:
  nodes: 4
  nic: 200Gbps
training_job:
  model: {layers: 4, hidden: 1024, heads: 16, seq_length: 1024, vocab: 32000}
  global_batch_size: 32
  parallelism: {tensor_parallel: 8, pipeline_parallel: 2, data_parallel: 2, sequence_parallel: true}
faults:
  - {kind: gpu_throttle, rank: 17, factor: 0.85}
)";
  Config c = to_config(parse_document(yaml, Format::yaml));
  check_config(c);
  EXPECT_DOUBLE_EQ(c.cluster.nic.bps(), 200e9);
  ASSERT_EQ(c.faults.size(), 1u);
  EXPECT_EQ(c.faults[0].rank, 17);
  EXPECT_DOUBLE_EQ(c.faults[0].factor, 0.85);
  EXPECT_THROW(parse_document("cluster: [unclosed", Format::yaml), ScenarioError);
  EXPECT_THROW(parse_document("{\"a\": ", Format::json), ScenarioError);
  EXPECT_THROW(parse_document("[1, 2]", Format::json), ScenarioError);
}

TEST(Loader, FaultItemsAreCheckedLikeSections) {
  json doc = minimal();
  doc["faults"] = json::array({{{"kind", "gpu_throttle"}, {"rank", 99}, {"factr", 0.5}}});
  EXPECT_TRUE(has_problem(doc, "faults[0].factr: unknown key", "factor"));
  doc["faults"] = json::array({{{"kind", "gpu_throttle"}, {"rank", 99}}});
  EXPECT_TRUE(has_problem(doc, "faults[0].rank: got 99", "32 GPUs"));
  doc["faults"] = json::array({{{"kind", "node_kill"}}});
  EXPECT_TRUE(has_problem(doc, "faults[0].node: missing"));
}

TEST(Loader, OverridesSetNestedKeys) {
  json doc = minimal();
  apply_override(doc, "training_job.micro_batch_size=2");
  apply_override(doc, "network.ecn.kmin=50KB");
  apply_override(doc, "network.pfc.enabled=false");
  Config c = to_config(doc);
  EXPECT_EQ(c.training_job.micro_batch_size, 2);
  EXPECT_EQ(c.network.ecn.kmin.n, 50000);
  EXPECT_FALSE(c.network.pfc.enabled);
  EXPECT_THROW(apply_override(doc, "no-equals-sign"), ScenarioError);
  EXPECT_THROW(apply_override(doc, "cluster.nodes.x=1"), ScenarioError);
}

TEST(Schema, GeneratedFromTheTable) {
  const json s = json_schema();
  EXPECT_EQ(s["properties"]["cluster"]["properties"]["fabric"]["properties"]["switch_radix"]["type"],
            "integer");
  EXPECT_EQ(s["properties"]["cluster"]["additionalProperties"], false);
  EXPECT_EQ(s["properties"]["network"]["properties"]["mode"]["enum"].size(), 3u);
  EXPECT_EQ(s["properties"]["faults"]["type"], "array");
  size_t leaves = 0;
  for (const auto& p : param_table()) {
    (void)p;
    ++leaves;
  }
  EXPECT_GT(leaves, 80u);
  EXPECT_NE(help_text().find("cluster.fabric.switch_radix"), std::string::npos);
  // Every default in the table is itself valid.
  EXPECT_NO_THROW(to_config(minimal()));
}

TEST(Loader, InterleavedScheduleNeedsMicrobatchesMultipleOfStages) {
  json doc = minimal();
  doc["training_job"]["parallelism"]["virtual_pipeline"] = 2;
  doc["training_job"]["global_batch_size"] = 6;  // 3 micro-batches per replica, PP 2
  EXPECT_TRUE(has_problem(doc, "virtual_pipeline", "multiple of pipeline_parallel"));
}

// Found by the fuzzer: invalid UTF-8 in a YAML value used to escape as a JSON type error.
TEST(Loader, InvalidUtf8IsAScenarioError) {
  const std::string yaml = "trace: {format: c\xaa\xaa, path: x}\n";
  EXPECT_THROW(parse_document(yaml, Format::yaml), ScenarioError);
  EXPECT_THROW(parse_document("{\"name\": \"\xc3\"}", Format::json), ScenarioError);
  EXPECT_NO_THROW(parse_document("name: caf\xc3\xa9\ncluster: {nodes: 2}\n", Format::yaml));
}

// Found by the fuzzer: a top-level key containing ']' broke the list-item path display.
TEST(Loader, KeysWithBracketsAreUnknownKeysNotCrashes) {
  const std::string yaml = "cluster: {nodes: 2}\nfaults]: 1\ntraffic: {pattern: incast}\n";
  try {
    to_config(parse_document(yaml, Format::yaml));
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("faults]: unknown key"), std::string::npos) << e.what();
  }
}

namespace {
std::string parse_error(const std::string& text, Format format) {
  try {
    parse_document(text, format);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// Issue 20: nested aliases stop at the yaml_nodes limit (not at the machine's memory), keys
// given twice and numbers beyond double's range are errors naming their key path.
TEST(Loader, YamlAliasBombStopsAtTheNodeLimit) {
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int k = 1; k < 10; ++k) yaml += ", " + prev;
    yaml += "]\n";
  }
  const std::string e = parse_error(yaml, Format::yaml);  // 1e9 nodes expanded
  EXPECT_NE(e.find("document: 1000001 nodes or more, above the yaml_nodes limit of 1000000"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("raise it with --limit yaml_nodes=N"), std::string::npos) << e;
  // Aliases within the limit still read as copies.
  const json doc = parse_document("a: &x {n: 1}\nb: *x\n", Format::yaml);
  EXPECT_EQ(doc["b"]["n"], 1);
}

// An anchor that contains itself (b: &b [*b]) nests without end through aliases; the fuzzer's
// input overflowed the stack. It stops at the scenario_nesting depth with an error.
TEST(Loader, ARecursiveYamlAliasIsAnErrorNotAStackOverflow) {
  const std::string e = parse_error("a: &a [1, 2]\nb: &b [*a, *a, *b]\n", Format::yaml);
  EXPECT_NE(e.find("nesting deeper than 64 levels through YAML aliases"), std::string::npos) << e;
  EXPECT_NE(e.find("b[2][2][2]"), std::string::npos) << e;
}

TEST(Loader, KeysGivenTwiceAreErrorsNamingThePath) {
  EXPECT_NE(parse_error("cluster:\n  nodes: 2\n  nodes: 4\n", Format::yaml)
                .find("cluster.nodes: given twice (line 3)"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"cluster": {"nodes": 2, "gpu": "A100-80GB", "nodes": 4}})", Format::json)
                .find("cluster.nodes: given twice"),
            std::string::npos);
  // The same key in two different objects is fine.
  EXPECT_NO_THROW(
      parse_document(R"({"a": {"n": 1}, "b": {"n": 2}, "c": [{"n": 1}, {"n": 2}]})", Format::json));
}

TEST(Loader, NonFiniteNumbersNameTheirKeyPath) {
  EXPECT_NE(parse_error(R"({"cluster": {"nodes": NaN}})", Format::json).find("cluster.nodes: not valid JSON"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"faults": [{"kind": "link_down"}, {"factor": 1e400}]})", Format::json)
                .find("faults[1].factor: a number beyond the range of a double"),
            std::string::npos);
  EXPECT_NE(parse_error("cluster:\n  nodes: -1e400\n", Format::yaml)
                .find("cluster.nodes: -1e400 is beyond the range"),
            std::string::npos);
  // Quoted, it is a string (and the table walk reports its type).
  EXPECT_EQ(parse_document("name: '1e400'\n", Format::yaml)["name"], "1e400");
}

TEST(Loader, ScenarioFromAnEndlessStreamStopsAtTheLimit) {
  try {
    read_document("/dev/zero", {});
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "scenario file '/dev/zero': 17825792 bytes or more, above the scenario_bytes limit"),
              std::string::npos)
        << e.what();
  }
}

TEST(Loader, ModelPresetFillsTheModelAndGivenKeysWin) {
  json doc = minimal();
  doc["training_job"]["model"] = {{"preset", "llama3-70b"}};
  doc["training_job"]["parallelism"] = {
      {"tensor_parallel", 8}, {"pipeline_parallel", 4}, {"data_parallel", 1}};
  Config c = to_config(doc);
  check_config(c);
  const auto& m = c.training_job.model;
  EXPECT_EQ(m.preset, "llama3-70b");
  EXPECT_EQ(m.layers, 80);
  EXPECT_EQ(m.hidden, 8192);
  EXPECT_EQ(m.heads, 64);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.ffn_hidden, 28672);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_EQ(m.seq_length, 8192);
  EXPECT_EQ(m.activation, "swiglu");
  EXPECT_FALSE(m.tied_embeddings);
  doc["training_job"]["model"]["seq_length"] = 4096;  // a key beside the preset wins
  EXPECT_EQ(to_config(doc).training_job.model.seq_length, 4096);
  doc["training_job"]["model"] = {{"preset", "mixtral-8x7b"}, {"moe", {{"capacity_factor", 1.25}}}};
  const Config moe = to_config(doc);
  EXPECT_EQ(moe.training_job.model.moe.experts, 8);
  EXPECT_EQ(moe.training_job.model.moe.top_k, 2);
  EXPECT_DOUBLE_EQ(moe.training_job.model.moe.capacity_factor, 1.25);
}

TEST(Loader, EveryPresetLoadsAndBadPresetsSayWhy) {
  for (const ModelPreset& p : model_presets()) {
    json doc = minimal();
    doc["training_job"]["model"] = {{"preset", p.name}};
    doc["training_job"]["parallelism"] = {
        {"tensor_parallel", 1}, {"pipeline_parallel", 1}, {"data_parallel", 32}};
    EXPECT_TRUE(problems_of(doc).empty()) << p.name;
    EXPECT_FALSE(p.source.empty()) << p.name;
  }
  json doc = minimal();
  doc["training_job"]["model"]["preset"] = "llama9";
  EXPECT_TRUE(has_problem(doc, "training_job.model.preset: got 'llama9'", "llama3-8b"));
  doc["training_job"]["model"]["preset"] = "deepseek-v2";
  EXPECT_TRUE(has_problem(doc, "training_job.model.preset", "model keys (mla, moe with dense_layers)"));
  doc["training_job"]["model"]["preset"] = 7;
  EXPECT_TRUE(has_problem(doc, "training_job.model.preset: got 7", "expected one of"));
  EXPECT_EQ(problems_of(doc).size(), 1u);  // reported once, and the model keys it would fill are given
}

TEST(Loader, FrameworkKeyNamesPointAtOurs) {
  json doc = minimal();
  doc["training_job"]["parallelism"]["tensor_model_parallel_size"] = 8;
  EXPECT_TRUE(has_problem(doc, "tensor_model_parallel_size: unknown key",
                          "did you mean 'training_job.parallelism.tensor_parallel'"));
  doc = minimal();
  doc["training_job"]["model"]["num_query_groups"] = 8;
  EXPECT_TRUE(has_problem(doc, "num_query_groups", "training_job.model.kv_heads"));
  doc = minimal();
  doc["training_job"]["model"]["intermediate_size"] = 8;
  EXPECT_TRUE(has_problem(doc, "intermediate_size", "training_job.model.ffn_hidden"));
  doc = minimal();
  doc["training_job"]["runtime"]["fp4_recipe"] = "nvfp4";  // Megatron-Bridge's NVFP4 switch
  EXPECT_TRUE(has_problem(doc, "fp4_recipe: unknown key", "did you mean 'training_job.runtime.precision'"));
}
