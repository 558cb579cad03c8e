#include "store/value_reader.h"

#include <algorithm>
#include <cstring>

#include "store/event_codec.h"
#include "store/record_io.h"
#include "trainscope/crc32c.h"

namespace trainscope {

namespace {

std::string At(const RecordSpec& s) {
  return s.display_path + ", record at byte " + std::to_string(s.offset);
}

size_t AlignmentOf(DType t) {
  switch (t) {
    case DType::kComplex64:
      return 4;
    case DType::kComplex128:
      return 8;
    default:
      return std::max<size_t>(1, std::min<size_t>(8, DTypeSize(t)));
  }
}

}  // namespace

Tensor AlignTensor(Tensor t) {
  if (t.dtype == DType::kString || t.data == nullptr || t.nbytes() == 0 ||
      reinterpret_cast<uintptr_t>(t.data) % AlignmentOf(t.dtype) == 0) {
    return t;
  }
  const size_t n = t.nbytes();
  std::shared_ptr<uint64_t[]> buf(new uint64_t[(n + 7) / 8]);
  std::memcpy(buf.get(), t.data, n);
  t.data = buf.get();
  t.keepalive = std::move(buf);
  return t;
}

ValueReader::ValueReader(Env* env, size_t max_mapped_files, bool verify_checksums)
    : env_(env), capacity_(std::max<size_t>(1, max_mapped_files)), verify_(verify_checksums) {}

size_t ValueReader::mapped_files() const {
  MutexLock l(&mu_);
  return lru_.size();
}

Result<std::shared_ptr<const FileRegion>> ValueReader::Map(const std::string& path, bool fresh) {
  {
    MutexLock l(&mu_);
    auto it = map_.find(path);
    if (it != map_.end()) {
      if (!fresh) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
      lru_.erase(it->second);
      map_.erase(it);
    }
  }
  // Map outside the lock: it is a few syscalls, and other readers need not wait for them.
  TS_ASSIGN_OR_RETURN(std::shared_ptr<const FileRegion> region, env_->MapFile(path));
  MutexLock l(&mu_);
  auto it = map_.find(path);
  if (it != map_.end()) {  // another thread mapped it meanwhile: keep theirs
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  lru_.emplace_front(path, region);
  map_.emplace(path, lru_.begin());
  while (lru_.size() > capacity_) {
    map_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return region;
}

Result<Tensor> ValueReader::Read(const RecordSpec& spec) {
  auto mapped = Map(spec.path, /*fresh=*/false);
  if (!mapped.ok()) {
    if (mapped.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("event file " + spec.display_path + " named by the index for \"" +
                              std::string(spec.expected_tag) +
                              "\" does not exist (was the trial folder moved or pruned?)");
    }
    return mapped.status();
  }
  std::shared_ptr<const FileRegion> region = std::move(mapped).value();
  if (spec.offset > region->size() || region->size() - spec.offset < spec.length) {
    // The mapping may predate a rewrite of the file: map it again once.
    TS_ASSIGN_OR_RETURN(region, Map(spec.path, /*fresh=*/true));
    if (spec.offset > region->size() || region->size() - spec.offset < spec.length) {
      return Status::Corruption(At(spec) + ": the index says the record is " +
                                std::to_string(spec.length) + " bytes, but the file has only " +
                                std::to_string(region->size()) +
                                " bytes (truncated event file or wrong index entry)");
    }
  }
  TS_ASSIGN_OR_RETURN(record_io::RecordRef rec,
                      record_io::ParseRecordAt(region->view(), spec.offset, spec.display_path));
  if (rec.length != spec.length) {
    return Status::Corruption(At(spec) + ": the record is " + std::to_string(rec.length) +
                              " bytes but the index entry says " + std::to_string(spec.length));
  }
  if (verify_ && spec.crc32c) {
    const uint32_t crc = crc32c::Value(rec.payload.data(), rec.payload.size());
    if (crc != *spec.crc32c) {
      return Status::Corruption(At(spec) + ": payload CRC32C is " + std::to_string(crc) +
                                " but the index entry says " + std::to_string(*spec.crc32c) +
                                " (the event file was damaged after it was written)");
    }
  }
  const std::string context = At(spec);
  TS_ASSIGN_OR_RETURN(event_codec::EventView ev, event_codec::DecodeEvent(rec.payload, context));
  if (ev.values.size() != 1 || ev.values[0].kind != event_codec::SummaryValueView::Kind::kTensor) {
    return Status::Corruption(context + ": expected an event holding exactly one tensor, found " +
                              std::to_string(ev.values.size()) + " summary values");
  }
  const event_codec::SummaryValueView& v = ev.values[0];
  if (!spec.expected_tag.empty() && v.tag != spec.expected_tag) {
    return Status::Corruption(context + ": the record holds tensor \"" + std::string(v.tag) +
                              "\" but the index entry names \"" + std::string(spec.expected_tag) +
                              "\"");
  }
  TS_ASSIGN_OR_RETURN(Tensor t, event_codec::TensorFromProto(
                                    v.tensor, std::shared_ptr<const void>(region), context));
  return AlignTensor(std::move(t));
}

}  // namespace trainscope
