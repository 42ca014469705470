#include "model/expert_layout.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "core/error.hpp"
#include "model/gpt_layout.hpp"

namespace zt {

namespace {

// The expert a tensor belongs to ("...experts.5.up_proj.weight": 5), or -1; its group's name
// ("...experts") in `group`.
int expert_of(const std::string& name, std::string* group = nullptr) {
  const size_t at = name.find(".experts.");
  if (at == std::string::npos) return -1;
  const size_t first = at + 9, end = name.find('.', first);
  if (group) *group = name.substr(0, at + 8);
  return std::stoi(name.substr(first, end - first));
}

// Appends `t` to group g of `layout` at its end.
void append(ParamLayout& layout, ParamGroup& g, TensorSpec t) {
  t.offset = layout.total;
  layout.total += t.numel();
  g.size += t.numel();
  g.tensors.push_back(std::move(t));
}

}  // namespace

ParamLayout expert_parallel_layout(const GptShape& shape, const ParamLayout& whole, ExpertPlace place) {
  if (!place.split() || !shape.moe.enabled()) return whole;
  const int E = shape.moe.num_experts;
  if (E % place.size != 0 || place.index < 0 || place.index >= place.size)
    fail("expert parallelism: place {} of {} cannot hold an equal share of {} experts", place.index, place.size, E);
  const int own = E / place.size, first = place.index * own;
  ParamLayout out;
  std::vector<ParamGroup> experts;  // per sparse layer, in layer order
  for (const ParamGroup& from : whole.groups) {
    ParamGroup& g = out.groups.emplace_back(ParamGroup{from.name, out.total, 0, {}, from.domain});
    ParamGroup* mine = nullptr;
    for (const TensorSpec& t : from.tensors) {
      std::string name;
      const int e = expert_of(t.name, &name);
      if (e < 0) {
        append(out, g, t);
        continue;
      }
      if (!mine) mine = &experts.emplace_back(ParamGroup{name, 0, 0, {}, 1});
      if (e >= first && e < first + own) mine->tensors.push_back(t);
    }
  }
  for (ParamGroup& from : experts) {
    ParamGroup& g = out.groups.emplace_back(ParamGroup{from.name, out.total, 0, {}, 1});
    for (TensorSpec& t : from.tensors) append(out, g, std::move(t));
  }
  return out;
}

int expert_group_of(const GptShape& shape, const ParamLayout& layout, int layer) {
  if (!shape.sparse(layer)) return -1;
  const std::string block = layout.groups[size_t(gpt_block_group(layer))].name + ".";
  for (size_t g = 0; g < layout.groups.size(); ++g)
    if (layout.groups[g].domain == 1 && layout.groups[g].name.rfind(block, 0) == 0) return int(g);
  return -1;
}

LayoutMap::LayoutMap(const ParamLayout& part, const ParamLayout& whole) {
  std::map<std::string, const TensorSpec*> by_name;
  for (const ParamGroup& g : whole.groups)
    for (const TensorSpec& t : g.tensors) by_name[t.name] = &t;
  const TrainableSpace whole_space(whole);
  auto whole_of = [&](const TensorSpec& t) -> const TensorSpec& {
    auto it = by_name.find(t.name);
    if (it == by_name.end() || it->second->shape != t.shape)
      fail("LayoutMap: tensor {} {} is not in the whole layout", t.name, shape_text(t.shape));
    return *it->second;
  };
  for (const ParamGroup& g : part.groups)
    for (const TensorSpec& t : g.tensors) flat_.push_back({t.offset, whole_of(t).offset, t.numel()});
  for (int d : {0, 1}) {
    ParamLayout sub;  // the domain's groups from 0, as the engine lays them
    for (const ParamGroup& g : part.groups) {
      if (g.domain != d) continue;
      ParamGroup& to = sub.groups.emplace_back(g);
      to.offset = sub.total;
      for (TensorSpec& t : to.tensors) t.offset = t.offset - g.offset + to.offset;
      sub.total += g.size;
    }
    const TrainableSpace space(sub);
    for (const ParamGroup& g : sub.groups)
      for (const TensorSpec& t : g.tensors)
        if (t.trainable)
          compact_[d].push_back({space.compact_at(t.offset), whole_space.compact_at(whole_of(t).offset), t.numel()});
  }
}

std::vector<LayoutMap::Piece> LayoutMap::pieces(const std::vector<Piece>& runs, Range r) {
  std::vector<Piece> out;
  auto it = std::upper_bound(runs.begin(), runs.end(), r.begin, [](size_t at, const Piece& p) { return at < p.from; });
  if (it != runs.begin()) --it;
  for (; it != runs.end() && it->from < r.end; ++it) {
    const Range piece = r.intersect({it->from, it->from + it->size});
    if (!piece.empty()) out.push_back({piece.begin, it->to + (piece.begin - it->from), piece.size()});
  }
  return out;
}

std::vector<LayoutMap::Piece> LayoutMap::flat(Range r) const { return pieces(flat_, r); }

void LayoutMap::read(Range r, float* dst, const std::function<void(float*, size_t, size_t)>& whole) const {
  std::fill(dst, dst + r.size(), 0.0f);
  for (const Piece& p : flat(r)) whole(dst + (p.from - r.begin), p.to, p.size);
}

std::vector<LayoutMap::Piece> LayoutMap::compact(int domain, Range r) const {
  return pieces(compact_[size_t(domain)], r);
}

}  // namespace zt
