// A request's begin or end, as the program marks it (COZ_BEGIN / COZ_END,
// COZ_BEGIN_KEY / COZ_END_KEY through `_coz_request`): the runtime side of
// the latency percentiles (libcoz/core/request_latency.h, docs/analysis.md section 13).
#pragma once

#include <coz.h>

#include <cstdint>

namespace coz {

/// `counter` is a latency point's begin or end counter (as _coz_get_counter
/// handed it out), `type` COZ_COUNTER_TYPE_BEGIN or _END; `keyed` pairs the
/// begin and end by `key` instead of by thread. Anything else is ignored.
void note_request(const coz_counter_t* counter, int type, uint64_t key, bool keyed);

}  // namespace coz
