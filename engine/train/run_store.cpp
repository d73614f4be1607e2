// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/run_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <thread>

#include "engine/graph/project.h"
#include "engine/serialize/serialize.h"
#include "engine/train/run_store_schema.h"

namespace nns::train {
namespace {

namespace fs = std::filesystem;
using graph::Json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kDatabase = "runs.db";
// The schema's version, in SQLite's user_version (a later one may migrate): the schema
// file's (nnstudio_runs_schema.json, which the PyTorch recorder reads too).
int64_t schema_version() {
  return run_store_schema().at("version").get<int64_t>();
}

// A store whose schema is newer than schema_version(): refused as it is, not as damaged.
class NewerSchema : public RunStoreError {
 public:
  using RunStoreError::RunStoreError;
};

// SQLite's "database is locked": another connection holds a lock SQLite would not wait for
// (changing the journal mode, recovering the WAL index of a store another process is making).
class StoreBusy : public RunStoreError {
 public:
  using RunStoreError::RunStoreError;
};

// Throws the error of the last call on `db`, as StoreBusy when it was busy or locked.
[[noreturn]] void throw_sqlite_error(sqlite3* db, const std::string& message) {
  const int code = sqlite3_errcode(db) & 0xff;
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) throw StoreBusy("run store: " + message);
  throw RunStoreError("run store: " + message);
}

// One prepared statement; bind with 1-based indices, step, read with 0-based columns.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
      throw_sqlite_error(db, std::string(sqlite3_errmsg(db)) + " (in: " + sql + ")");
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // NaN is stored as NULL (SQLite would anyway) and read back as NaN.
  Statement& bind(int i, double v) {
    if (std::isnan(v)) {
      sqlite3_bind_null(stmt_, i);
    } else {
      sqlite3_bind_double(stmt_, i, v);
    }
    return *this;
  }
  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // True while there is a row.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_sqlite_error(db_, sqlite3_errmsg(db_));
  }
  void run() {
    while (step()) {
    }
    reset();
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t integer(int c) const { return sqlite3_column_int64(stmt_, c); }
  double real(int c) const {
    return sqlite3_column_type(stmt_, c) == SQLITE_NULL ? kNaN : sqlite3_column_double(stmt_, c);
  }
  std::string text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, c));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, c))) : std::string();
  }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back if the scope ends by an exception.
// Runs SQL without results; RunStoreError with SQLite's message.
void exec_sql(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw_sqlite_error(db, message);
  }
}

class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { exec_sql(db_, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec_sql(db_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  bool done_ = false;
};

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// Node positions are where the canvas draws, not what the model is.
void drop_positions(Json& json) {
  if (json.is_object()) {
    if (json.contains("id") && json.contains("type")) {
      json.erase("x");
      json.erase("y");
    }
    for (auto& [key, value] : json.items()) drop_positions(value);
  } else if (json.is_array()) {
    for (Json& value : json) drop_positions(value);
  }
}

// Every leaf as "a.b.c" -> its JSON text.
void flatten(const Json& json, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (json.is_object() && !json.empty()) {
    for (auto it = json.begin(); it != json.end(); ++it) {
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
  } else {
    out[prefix] = json.dump();
  }
}

// A step's metrics as stored (native byte order, the machine's own file).
struct StepRecord {
  int64_t step;
  int64_t epoch;
  double loss;
  double smoothed_loss;
  double accuracy;
  double lr;
};
static_assert(sizeof(StepRecord) == 48);

// A probe sample as stored: this header, then the module's and the tensor's names and the
// histogram's counts (the layout in run_store.h).
struct ProbeRecord {
  int64_t step;
  int64_t interval;
  int64_t numel;
  int64_t nonfinite;
  double mean;
  double std;
  double min;
  double max;
  double norm;
  double zero_fraction;
  double saturated_fraction;
  double update_ratio;
  double histogram_lo;
  double histogram_hi;
  int32_t kind;
  int32_t module_bytes;
  int32_t tensor_bytes;
  int32_t bins;
};
static_assert(sizeof(ProbeRecord) == 128);
static_assert(static_cast<int>(ProbeKind::Activation) == 0 &&
              static_cast<int>(ProbeKind::GradOutput) == 1 &&
              static_cast<int>(ProbeKind::GradInput) == 2 &&
              static_cast<int>(ProbeKind::ParamGrad) == 3);

void pack_probe_sample(const ProbeSample& p, std::string& out) {
  const TensorStats& t = p.stats;
  const ProbeRecord r{p.step,
                      p.interval,
                      t.numel,
                      t.nonfinite,
                      t.mean,
                      t.std,
                      t.min,
                      t.max,
                      t.norm,
                      t.zero_fraction,
                      t.saturated_fraction,
                      p.update_ratio,
                      t.histogram.lo,
                      t.histogram.hi,
                      static_cast<int32_t>(p.kind),
                      static_cast<int32_t>(p.module.size()),
                      static_cast<int32_t>(p.tensor.size()),
                      static_cast<int32_t>(t.histogram.counts.size())};
  out.append(reinterpret_cast<const char*>(&r), sizeof r);
  out += p.module;
  out += p.tensor;
  out.append(reinterpret_cast<const char*>(t.histogram.counts.data()),
             t.histogram.counts.size() * sizeof(int64_t));
}

// The samples of one stored batch at or before `up_to`; RunStoreError naming the run when the
// bytes do not hold whole records.
void unpack_probe_samples(const char* data, size_t bytes, int64_t run, int64_t up_to,
                          std::vector<ProbeSample>& out) {
  auto damaged = [&] {
    return RunStoreError("run store: run " + std::to_string(run) +
                         "'s probe samples are damaged (a batch of " + std::to_string(bytes) +
                         " bytes)");
  };
  for (size_t at = 0; at < bytes;) {
    ProbeRecord r;
    if (bytes - at < sizeof r) throw damaged();
    std::memcpy(&r, data + at, sizeof r);
    at += sizeof r;
    if (r.kind < 0 || r.kind > static_cast<int32_t>(ProbeKind::ParamGrad) || r.module_bytes < 0 ||
        r.tensor_bytes < 0 || r.bins < 0 ||
        bytes - at < static_cast<size_t>(r.module_bytes) + static_cast<size_t>(r.tensor_bytes) +
                         static_cast<size_t>(r.bins) * sizeof(int64_t)) {
      throw damaged();
    }
    const char* strings = data + at;
    at += static_cast<size_t>(r.module_bytes) + static_cast<size_t>(r.tensor_bytes);
    const char* counts = data + at;
    at += static_cast<size_t>(r.bins) * sizeof(int64_t);
    if (r.step > up_to) continue;
    ProbeSample& p = out.emplace_back();
    p.step = r.step;
    p.interval = r.interval;
    p.kind = static_cast<ProbeKind>(r.kind);
    p.module.assign(strings, static_cast<size_t>(r.module_bytes));
    p.tensor.assign(strings + r.module_bytes, static_cast<size_t>(r.tensor_bytes));
    p.update_ratio = r.update_ratio;
    TensorStats& t = p.stats;
    t.numel = r.numel;
    t.nonfinite = r.nonfinite;
    t.mean = r.mean;
    t.std = r.std;
    t.min = r.min;
    t.max = r.max;
    t.norm = r.norm;
    t.zero_fraction = r.zero_fraction;
    t.saturated_fraction = r.saturated_fraction;
    t.histogram.lo = r.histogram_lo;
    t.histogram.hi = r.histogram_hi;
    t.histogram.counts.resize(static_cast<size_t>(r.bins));
    // No copy for no bins: an empty vector's data() may be null, which memcpy must not get.
    if (r.bins > 0) {
      std::memcpy(t.histogram.counts.data(), counts, static_cast<size_t>(r.bins) * sizeof(int64_t));
    }
  }
}

std::string relative_snapshot_path(int64_t run, int64_t step, const char* extension) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "run-%lld/step-%09lld%s", static_cast<long long>(run),
                static_cast<long long>(step), extension);
  return buf;
}

int64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

}  // namespace

std::string run_settings(const graph::Project& project) {
  const Json json = Json::parse(graph::project_to_json(project));
  Json settings = Json::object();
  settings["dataset"] = json.value("dataset", Json::object());
  settings["training"] = json.value("training", Json::object());
  return settings.dump();
}

std::string architecture_hash(const graph::Project& project) {
  Json json = Json::parse(graph::project_to_json(project));
  Json model = Json::object();
  model["name"] = json.value("name", Json());
  model["graph"] = json.value("graph", Json());
  model["blocks"] = json.value("blocks", Json());
  drop_positions(model);
  // FNV-1a, 64 bits: a label that tells architectures apart, not a security measure.
  uint64_t h = 14695981039346656037ULL;
  for (const unsigned char c : model.dump()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string describe_changes(const RunInfo& from, const RunInfo& to) {
  std::map<std::string, std::string> a, b;
  try {
    flatten(Json::parse(from.settings), "", a);
    flatten(Json::parse(to.settings), "", b);
  } catch (const std::exception&) {
    // Settings that are not JSON (a store written by hand) compare as unknown.
  }
  std::vector<std::string> parts;
  // "lr", "noise": the option's own name where the group it is in goes without saying.
  auto name = [](std::string key) {
    for (const char* prefix : {"training.optimizer_options.", "dataset.options.", "training."}) {
      const std::string p = prefix;
      if (key.rfind(p, 0) == 0) return key.substr(p.size());
    }
    return key;
  };
  // How long a run goes is not how it trains.
  a.erase("training.epochs");
  b.erase("training.epochs");
  for (const auto& [key, value] : b) {
    const auto it = a.find(key);
    if (it == a.end()) {
      parts.push_back(name(key) + " " + value);
    } else if (it->second != value) {
      parts.push_back(name(key) + " " + it->second + " -> " + value);
    }
  }
  for (const auto& [key, value] : a) {
    if (!b.count(key)) parts.push_back(name(key) + " removed");
  }
  if (from.architecture != to.architecture) parts.push_back("architecture");
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string RunStore::folder_for(const std::string& project_path) {
  fs::path p(project_path);
  const std::string name = p.stem().string() + ".runs";
  const char* elsewhere = std::getenv("NNSTUDIO_RUNS_DIR");
  if (elsewhere && *elsewhere) return (fs::path(elsewhere) / name).string();
  return (p.parent_path() / name).string();
}

RunStore::RunStore(const std::string& folder) : folder_(folder) {
  std::error_code ec;
  fs::create_directories(folder_, ec);
  if (ec) {
    throw RunStoreError("run store '" + folder_ + "': cannot make the folder: " + ec.message());
  }
  const std::string db_path = (fs::path(folder_) / kDatabase).string();
  if (sqlite3_open_v2(db_path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw RunStoreError("run store '" + db_path + "' cannot be opened: " + message);
  }
  sqlite3_busy_timeout(db_, 5000);
  // Two processes making a new store at once: where SQLite answers "locked" without waiting,
  // the opening is tried again, for as long as the busy timeout, before it counts as a fault.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (bool opened = false; !opened;) try {
      // A file that is not a database fails here ("file is not a database").
      {
        Statement check(db_, "PRAGMA quick_check");
        std::string verdict;
        while (check.step()) verdict += (verdict.empty() ? "" : "; ") + check.text(0);
        if (verdict != "ok") throw RunStoreError(verdict);
      }
      // Another process (the window, a CLI run) may be opening or writing the same store: the
      // journal mode is set once for the file, the schema made once, in a write transaction.
      Statement journal(db_, "PRAGMA journal_mode");
      journal.step();
      const std::string mode = journal.text(0);
      journal.reset();
      if (mode != "wal") exec("PRAGMA journal_mode=WAL");
      exec("PRAGMA synchronous=NORMAL");
      Statement version(db_, "PRAGMA user_version");
      version.step();
      int64_t found = version.integer(0);
      version.reset();
      if (found > schema_version()) {
        throw NewerSchema("run store '" + db_path + "' was written by a newer NN Studio (schema " +
                          std::to_string(found) + ", this one reads " +
                          std::to_string(schema_version()) +
                          "): open it with that version; nothing in it was changed");
      }
      // Read again inside the write transaction: a second process (the window's test reading
      // beside a CLI run) may have made or upgraded the schema since, and ALTER TABLE is not
      // idempotent (a second upgrade fails with "duplicate column name", which reads as damage).
      const auto version_now = [&] {
        Statement v(db_, "PRAGMA user_version");
        v.step();
        return v.integer(0);
      };
      std::optional<Transaction> t;
      if (found < schema_version()) t.emplace(db_);
      if (found < schema_version() && (found = version_now()) < schema_version()) {
        // Made or brought up to date as the schema file says (the recorder does the same).
        const graph::Json& schema = run_store_schema();
        for (const graph::Json& statement : schema.at("tables")) exec(statement.get<std::string>());
        for (const graph::Json& upgrade : schema.at("upgrades")) {
          if (found >= upgrade.at("to").get<int64_t>()) continue;
          for (const graph::Json& statement : upgrade.at("statements")) {
            exec(statement.get<std::string>());
          }
        }
        exec("PRAGMA user_version=" + std::to_string(schema_version()));
      }
      if (t) t->commit();
      opened = true;
    } catch (const NewerSchema& e) {
      // Not damaged: a store this version cannot read, left as it is.
      sqlite3_close(db_);
      db_ = nullptr;
      throw RunStoreError(e.what());
    } catch (const StoreBusy&) {
      if (std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      sqlite3_close(db_);
      db_ = nullptr;
      throw RunStoreError("run store '" + db_path + "' stays locked by another process; try again");
    } catch (const Error& e) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw RunStoreError("run store '" + db_path + "' is damaged or not a run store: " + e.what() +
                          "; the project is unaffected: move the folder '" + folder_ +
                          "' aside to start a new one");
    }
}

RunStore::~RunStore() {
  sqlite3_close(db_);
}

void RunStore::exec(const std::string& sql) const {
  exec_sql(db_, sql);
}

std::string RunStore::path_in_store(const std::string& relative) const {
  // A store is read as untrusted (a watched folder can come from anyone): a file the store
  // names is one of its own, in its folder, or the row naming it is damaged.
  const fs::path normal = fs::path(relative).lexically_normal();
  if (relative.empty() || normal.is_absolute() || normal.has_root_name() ||
      *normal.begin() == "..") {
    throw RunStoreError("the run store " + folder_ + " is damaged: it names the file '" + relative +
                        "', which is outside its folder; nothing was read from it");
  }
  return (fs::path(folder_) / normal).string();
}

int64_t RunStore::budget() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement s(db_, "SELECT value FROM meta WHERE key = 'budget_bytes'");
  if (!s.step()) return kDefaultBudgetBytes;
  try {
    return std::stoll(s.text(0));
  } catch (const std::exception&) {
    return kDefaultBudgetBytes;
  }
}

void RunStore::set_budget(int64_t bytes) {
  if (bytes < 0) throw ValueError("run store: the budget must not be negative");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('budget_bytes', ?)")
      .bind(1, std::to_string(bytes))
      .run();
  thin_to_budget();
}

int64_t RunStore::snapshot_bytes() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement s(db_, "SELECT COALESCE(SUM(bytes), 0) FROM snapshots");
  s.step();
  return s.integer(0);
}

int64_t RunStore::begin_run(const RunInfo& info) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement s(db_,
              "INSERT INTO runs(name, started, parent, parent_step, settings, architecture, "
              "project, changes, steps, source, processes, host, device) "
              "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, info.name)
      .bind(2, info.started.empty() ? utc_now() : info.started)
      .bind(3, info.parent)
      .bind(4, info.parent_step)
      .bind(5, info.settings)
      .bind(6, info.architecture)
      .bind(7, info.project)
      .bind(8, info.changes)
      .bind(9, info.parent_step)
      .bind(10, info.source.empty() ? std::string("nnstudio") : info.source)
      .bind(11, std::max<int64_t>(info.processes, 1))
      .bind(12, info.host)
      .bind(13, info.device)
      .run();
  return sqlite3_last_insert_rowid(db_);
}

void RunStore::add_steps(int64_t run, const std::vector<StepMetrics>& steps) {
  if (steps.empty()) return;
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Transaction t(db_);
  // One row per batch of steps, their records packed (kStepRecord): a row per step cost the
  // writer as much CPU as 6% of the training's (tests/bench/bench_runs).
  std::string blob;
  blob.reserve(steps.size() * sizeof(StepRecord));
  int64_t last = 0;
  for (const StepMetrics& m : steps) {
    const StepRecord r{m.step, m.epoch, m.loss, m.smoothed_loss, m.accuracy, m.lr};
    blob.append(reinterpret_cast<const char*>(&r), sizeof r);
    last = std::max(last, m.step);
  }
  Statement s(db_,
              "INSERT OR REPLACE INTO step_metrics(run, first_step, last_step, steps) "
              "VALUES(?, ?, ?, ?)");
  s.bind(1, run).bind(2, steps.front().step).bind(3, last);
  sqlite3_bind_blob(s.get(), 4, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
  s.run();
  // Steps recorded after the run's figures: it goes on (a paused run trained again).
  Statement(db_, "UPDATE runs SET steps = MAX(steps, ?), finished = 0 WHERE id = ?")
      .bind(1, last)
      .bind(2, run)
      .run();
  t.commit();
}

void RunStore::add_epochs(int64_t run, const std::vector<EpochMetrics>& epochs) {
  if (epochs.empty()) return;
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Transaction t(db_);
  Statement s(db_,
              "INSERT OR REPLACE INTO epoch_metrics(run, epoch, step, train_loss, "
              "train_accuracy, test_loss, test_accuracy, test_sequence_accuracy, seconds, "
              "steps_per_second) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const EpochMetrics& e : epochs) {
    s.bind(1, run).bind(2, e.epoch).bind(3, e.step).bind(4, e.train_loss);
    s.bind(5, e.train_accuracy).bind(6, e.test_loss).bind(7, e.test_accuracy);
    s.bind(8, e.test_sequence_accuracy).bind(9, e.seconds).bind(10, e.steps_per_second).run();
  }
  t.commit();
}

void RunStore::add_snapshot(int64_t run, const TrainingState& state) {
  const std::string weights = relative_snapshot_path(run, state.step, ".safetensors");
  const std::string rest = relative_snapshot_path(run, state.step, ".pt");
  std::error_code ec;
  fs::create_directories(fs::path(path_in_store(weights)).parent_path(), ec);
  if (ec)
    throw RunStoreError("run store: cannot make the folder for " + weights + ": " + ec.message());
  // The files first (each atomically), outside the lock: a reader is never kept waiting for a
  // write, and a row only ever names complete files.
  save_snapshot(state, path_in_store(weights), path_in_store(rest));
  const int64_t bytes = file_bytes(path_in_store(weights)) + file_bytes(path_in_store(rest));
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement(db_,
            "INSERT OR REPLACE INTO snapshots(run, step, epoch, weights, state, bytes) "
            "VALUES(?, ?, ?, ?, ?, ?)")
      .bind(1, run)
      .bind(2, state.step)
      .bind(3, state.epoch)
      .bind(4, weights)
      .bind(5, rest)
      .bind(6, bytes)
      .run();
  thin_to_budget();
}

void RunStore::thin_to_budget() {
  const int64_t limit = budget();
  int64_t total = snapshot_bytes();
  while (total > limit) {
    // The oldest run with an intermediate snapshot; in it, the snapshot whose neighbours are
    // closest together (what is lost is the least of the run's coverage), the earliest of
    // equals.
    Statement runs(db_, "SELECT DISTINCT run FROM snapshots ORDER BY run");
    std::optional<SnapshotInfo> victim;
    while (!victim && runs.step()) {
      const std::vector<SnapshotInfo> list = snapshots(runs.integer(0));
      int64_t best_gap = std::numeric_limits<int64_t>::max();
      for (size_t i = 1; i + 1 < list.size(); ++i) {
        const int64_t gap = list[i + 1].step - list[i - 1].step;
        if (gap < best_gap) {
          best_gap = gap;
          victim = list[i];
        }
      }
    }
    if (!victim) return;  // only firsts and lasts left: those are kept over the budget
    Statement(db_, "DELETE FROM snapshots WHERE run = ? AND step = ?")
        .bind(1, victim->run)
        .bind(2, victim->step)
        .run();
    std::error_code ec;
    fs::remove(victim->weights_path, ec);
    fs::remove(victim->state_path, ec);
    total -= victim->bytes;
  }
}

void RunStore::add_probe_samples(int64_t run, const std::vector<ProbeSample>& samples) {
  // One row per batch, packed as the step metrics are: a sampled step of a few probes makes
  // a dozen samples.
  std::string blob;
  int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
  for (const ProbeSample& p : samples) {
    if (p.kind == ProbeKind::Attention) continue;
    pack_probe_sample(p, blob);
    first = std::min(first, p.step);
    last = std::max(last, p.step);
  }
  if (blob.empty()) return;
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement s(db_,
              "INSERT INTO probe_samples(run, first_step, last_step, samples) VALUES(?, ?, ?, ?)");
  s.bind(1, run).bind(2, first).bind(3, last);
  sqlite3_bind_blob(s.get(), 4, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
  s.run();
}

void RunStore::finish_run(int64_t run, const RunResult& r) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement(db_,
            "UPDATE runs SET steps = ?, finished = 1, train_loss = ?, train_accuracy = ?, "
            "test_loss = ?, test_accuracy = ? WHERE id = ?")
      .bind(1, r.steps)
      .bind(2, r.train_loss)
      .bind(3, r.train_accuracy)
      .bind(4, r.test_loss)
      .bind(5, r.test_accuracy)
      .bind(6, run)
      .run();
}

void RunStore::rename_run(int64_t run, const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement(db_, "UPDATE runs SET name = ? WHERE id = ?").bind(1, name).bind(2, run).run();
}

void RunStore::delete_run(int64_t id) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const std::optional<RunInfo> info = run(id);
  if (!info) throw RunStoreError("run store: there is no run " + std::to_string(id));
  {
    Transaction t(db_);
    Statement(db_, "UPDATE runs SET parent = ? WHERE parent = ?")
        .bind(1, info->parent)
        .bind(2, id)
        .run();
    for (const char* table : {"step_metrics", "epoch_metrics", "snapshots", "probe_samples"}) {
      Statement(db_, std::string("DELETE FROM ") + table + " WHERE run = ?").bind(1, id).run();
    }
    Statement(db_, "DELETE FROM runs WHERE id = ?").bind(1, id).run();
    t.commit();
  }
  std::error_code ec;
  fs::remove_all(fs::path(folder_) / ("run-" + std::to_string(id)), ec);
}

RunInfo RunStore::read_run(void* statement) const {
  const Statement& s = *static_cast<const Statement*>(statement);
  RunInfo r;
  r.id = s.integer(0);
  r.name = s.text(1);
  r.started = s.text(2);
  r.parent = s.integer(3);
  r.parent_step = s.integer(4);
  r.settings = s.text(5);
  r.architecture = s.text(6);
  r.project = s.text(7);
  r.changes = s.text(8);
  r.first_step = r.parent_step;
  r.steps = s.integer(9);
  r.finished = s.integer(10) != 0;
  r.train_loss = s.real(11);
  r.train_accuracy = s.real(12);
  r.test_loss = s.real(13);
  r.test_accuracy = s.real(14);
  r.source = s.text(15);
  r.processes = s.integer(16);
  r.host = s.text(17);
  r.device = s.text(18);
  return r;
}

namespace {
constexpr const char* kRunColumns =
    "SELECT id, name, started, parent, parent_step, settings, architecture, project, changes, "
    "steps, finished, train_loss, train_accuracy, test_loss, test_accuracy, source, processes, "
    "host, device FROM runs";
}  // namespace

std::vector<RunInfo> RunStore::runs() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement s(db_, std::string(kRunColumns) + " ORDER BY id");
  std::vector<RunInfo> out;
  while (s.step()) out.push_back(read_run(&s));
  return out;
}

std::optional<RunInfo> RunStore::run(int64_t id) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement s(db_, std::string(kRunColumns) + " WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_run(&s);
}

std::vector<StepMetrics> RunStore::steps(int64_t run) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement s(db_, "SELECT steps FROM step_metrics WHERE run = ? ORDER BY first_step");
  s.bind(1, run);
  std::vector<StepMetrics> out;
  while (s.step()) {
    const auto* data = static_cast<const char*>(sqlite3_column_blob(s.get(), 0));
    const size_t bytes = static_cast<size_t>(sqlite3_column_bytes(s.get(), 0));
    if (bytes % sizeof(StepRecord) != 0) {
      throw RunStoreError("run store: run " + std::to_string(run) +
                          "'s step metrics are damaged (a record of " + std::to_string(bytes) +
                          " bytes)");
    }
    for (size_t at = 0; at < bytes; at += sizeof(StepRecord)) {
      StepRecord r;
      std::memcpy(&r, data + at, sizeof r);
      out.push_back({r.step, r.epoch, r.loss, r.smoothed_loss, r.accuracy, r.lr});
    }
  }
  // A step recorded twice (a batch written again) counts once, the later record winning.
  std::stable_sort(out.begin(), out.end(),
                   [](const StepMetrics& a, const StepMetrics& b) { return a.step < b.step; });
  std::vector<StepMetrics> unique;
  for (const StepMetrics& m : out) {
    if (!unique.empty() && unique.back().step == m.step) {
      unique.back() = m;
    } else {
      unique.push_back(m);
    }
  }
  return unique;
}

std::vector<EpochMetrics> RunStore::epochs(int64_t run) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement s(db_,
              "SELECT epoch, step, train_loss, train_accuracy, test_loss, test_accuracy, "
              "test_sequence_accuracy, seconds, steps_per_second FROM epoch_metrics "
              "WHERE run = ? ORDER BY epoch");
  s.bind(1, run);
  std::vector<EpochMetrics> out;
  while (s.step()) {
    EpochMetrics e;
    e.epoch = s.integer(0);
    e.step = s.integer(1);
    e.train_loss = s.real(2);
    e.train_accuracy = s.real(3);
    e.test_loss = s.real(4);
    e.test_accuracy = s.real(5);
    e.test_sequence_accuracy = s.real(6);
    e.seconds = s.real(7);
    e.steps_per_second = s.real(8);
    out.push_back(e);
  }
  return out;
}

std::vector<SnapshotInfo> RunStore::snapshots(int64_t run) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Statement s(db_,
              "SELECT step, epoch, weights, state, bytes FROM snapshots WHERE run = ? "
              "ORDER BY step");
  s.bind(1, run);
  std::vector<SnapshotInfo> out;
  while (s.step()) {
    out.push_back({run, s.integer(0), s.integer(1), s.integer(4), path_in_store(s.text(2)),
                   path_in_store(s.text(3))});
  }
  return out;
}

std::optional<SnapshotInfo> RunStore::snapshot_at(int64_t run, int64_t step) const {
  std::optional<SnapshotInfo> best;
  for (const SnapshotInfo& s : snapshots(run)) {
    if (s.step <= step) best = s;
  }
  return best;
}

std::vector<ProbeSample> RunStore::probe_samples(int64_t run, int64_t step) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  // Batches in the order written (a step's samples may span two).
  Statement s(db_,
              "SELECT samples FROM probe_samples WHERE run = ? AND first_step <= ? "
              "ORDER BY first_step, rowid");
  s.bind(1, run).bind(2, step);
  std::vector<ProbeSample> out;
  while (s.step()) {
    unpack_probe_samples(static_cast<const char*>(sqlite3_column_blob(s.get(), 0)),
                         static_cast<size_t>(sqlite3_column_bytes(s.get(), 0)), run, step, out);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ProbeSample& a, const ProbeSample& b) { return a.step < b.step; });
  return out;
}

std::vector<ProbeSample> RunStore::probe_history(int64_t run, int64_t step) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  // The lineage, newest first: each run up to the step its child branched from.
  std::vector<std::pair<int64_t, int64_t>> lineage;
  std::set<int64_t> seen;
  for (int64_t id = run, upTo = step; id != 0 && seen.insert(id).second;) {
    const std::optional<RunInfo> info = this->run(id);
    if (!info) break;
    lineage.emplace_back(id, upTo);
    upTo = std::min(upTo, info->parent_step);
    id = info->parent;
  }
  std::vector<ProbeSample> out;
  int64_t after = std::numeric_limits<int64_t>::min();
  for (auto it = lineage.rbegin(); it != lineage.rend(); ++it) {
    // A branch's own steps continue after the point it branched from.
    for (ProbeSample& p : probe_samples(it->first, it->second)) {
      if (p.step > after) out.push_back(std::move(p));
    }
    after = it->second;
  }
  return out;
}

uint64_t RunStore::revision() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  // This connection's changes, and data_version for every other connection's commits.
  Statement s(db_, "PRAGMA data_version");
  s.step();
  return static_cast<uint64_t>(sqlite3_total_changes64(db_)) + static_cast<uint64_t>(s.integer(0));
}

TrainingState RunStore::load(const SnapshotInfo& snapshot) const {
  return load_snapshot(snapshot.weights_path, snapshot.state_path);
}

nn::StateDict RunStore::load_weights(const SnapshotInfo& snapshot) const {
  return serialize::load_state_dict_file(snapshot.weights_path);
}

}  // namespace nns::train
