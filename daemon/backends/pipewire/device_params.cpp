// The PipeWire graph's devices: their params enumerated (a few devices at a time, in rounds),
// read as they answer, and committed once complete; and their stale lists read again.

#include "graph_detail.hpp"
#include "pod.hpp"

#include <spa/utils/result.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace qsd::pipewire {

void Graph::onDeviceInfo(void* data, const pw_device_info* info) noexcept {
	detail::guarded("device info", [&] {
		auto* d = static_cast<Device*>(data);
		if (info) d->graph->deviceInfo(*d, info);
	});
}

void Graph::deviceInfo(Device& d, const pw_device_info* info) {
	d.haveInfo = true;
	if ((info->change_mask & PW_DEVICE_CHANGE_MASK_PROPS) && info->props) {
		auto props = detail::toProps(info->props, detail::kDeviceKeys);
		if (props != d.props) {
			d.props = std::move(props);
			if (d.complete) changes_.devices.insert(d.id);
		}
	}
	if (!(info->change_mask & PW_DEVICE_CHANGE_MASK_PARAMS)) return;
	for (uint32_t i = 0; i < info->n_params; ++i) {
		const auto& p = info->params[i];
		if (!(p.flags & SPA_PARAM_INFO_READ)) continue;
		if (p.id != SPA_PARAM_EnumProfile && p.id != SPA_PARAM_Profile && p.id != SPA_PARAM_EnumRoute &&
		    p.id != SPA_PARAM_Route)
			continue;
		auto it = d.paramFlags.find(p.id);
		if (it != d.paramFlags.end() && it->second == p.flags) continue;
		if (it != d.paramFlags.end()) {
			// A change after the first listing: a new one, whatever re-reading the last one had.
			d.announced.insert(p.id);
			d.rereads.erase(p.id);
		}
		d.paramFlags[p.id] = p.flags;
		requestEnumeration(d, p.id);
	}
}

// Enumerates a param of a device now if the device is in the round, or if the round has room
// for it and nobody waits; else the device waits for a later round (kMaxEnumeratingDevices).
// Before, every device bound was enumerated at once: a hostile client's 300 devices of 200
// profiles and routes of 4 KB names sent qsd their answers in one burst, and libpipewire's
// receive buffer, which grows to hold what arrives without a pause and never shrinks, kept
// 123-208 MiB for the connection's life. A round's devices are few, and the next round is sent
// only once every answer of this one has come, so the buffer is read to its end between rounds
// and starts again from its beginning: it is as large as one round's answers at most. Waiting
// changes nothing of what completes a device: its waitGen stays kQueuedGen until its
// enumerations are sent, and then is the sync sent after them, as before.
void Graph::requestEnumeration(Device& d, uint32_t paramId) {
	if (enumerating_.empty()) roundDevices_ = 0;
	bool inRound = enumerating_.count(d.id) > 0;
	// A device already in the round starts again at once (as before), unless it did so too often
	// in this round: the round would not end while it keeps announcing changes.
	bool newPass = !inRound || d.enumGen != nextGen_;
	bool now = d.queuedParams.empty() &&
	           (inRound ? !newPass || d.passes < kMaxEnumerationPasses
	                    : roundDevices_ < kMaxEnumeratingDevices && enumerationQueue_.empty());
	if (!now) {
		// A device in the round joins the queue when it leaves the round (completed()).
		if (d.queuedParams.empty() && !inRound) enumerationQueue_.push_back(d.id);
		d.queuedParams.insert(paramId);
		d.waitGen = detail::kQueuedGen;
		return;
	}
	if (!inRound) {
		enumerating_.insert(d.id);
		++roundDevices_;
		d.passes = 0;
	}
	if (newPass) ++d.passes;
	enumerate(d, paramId);
}

// Once the round has no enumeration left unanswered: the devices waiting longest, up to
// kMaxEnumeratingDevices, enumerate what they wait for.
void Graph::startRound() {
	if (!enumerating_.empty()) return;
	roundDevices_ = 0;
	while (roundDevices_ < kMaxEnumeratingDevices && !enumerationQueue_.empty()) {
		uint32_t id = enumerationQueue_.front();
		enumerationQueue_.pop_front();
		auto it = devices_.find(id);
		if (it == devices_.end() || it->second->queuedParams.empty()) continue;
		Device& d = *it->second;
		std::set<uint32_t> params = std::move(d.queuedParams);
		d.queuedParams.clear();
		enumerating_.insert(id);
		++roundDevices_;
		d.passes = 1;
		for (uint32_t p: params) enumerate(d, p);
	}
}

// A device that left: it neither waits nor holds its round open any more.
void Graph::leaveRound(uint32_t device) {
	std::erase(enumerationQueue_, device);
	if (enumerating_.erase(device) > 0) startRound();
}

void Graph::enumerate(Device& d, uint32_t paramId) {
	d.refreshing.insert(paramId);
	switch (paramId) {
	case SPA_PARAM_EnumProfile: d.newProfiles.clear(); break;
	case SPA_PARAM_Profile: d.newProfile.reset(); break;
	case SPA_PARAM_EnumRoute: d.newRoutes.clear(); break;
	case SPA_PARAM_Route: d.newActiveRoutes.clear(); break;
	default: break;
	}
	d.newParamHashes[paramId] = detail::kFnvOffset;
	// The answers carry the request's async seq (as pw-dump matches them).
	int seq = ++paramSeq_;
	int res = pw_device_enum_params(reinterpret_cast<pw_device*>(d.proxy), seq, paramId, 0, UINT32_MAX, nullptr);
	d.enumSeq[paramId] = SPA_RESULT_IS_ASYNC(res) ? res : seq;
	// Complete at the done of a sync sent after this enumeration; and in the round until then.
	d.waitGen = nextGen_;
	d.enumGen = nextGen_;
	syncWanted_ = true;
}

void Graph::onDeviceParam(void* data, int seq, uint32_t id, uint32_t, uint32_t, const spa_pod* param) noexcept {
	detail::guarded("device param", [&] {
		auto* d = static_cast<Device*>(data);
		d->graph->deviceParam(*d, seq, id, param);
	});
}

void Graph::deviceParam(Device& d, int seq, uint32_t id, const spa_pod* param) {
	// Only the answers of the enumeration in flight: an older one's are stale.
	auto it = d.enumSeq.find(id);
	if (it == d.enumSeq.end() || it->second != seq || !d.refreshing.count(id)) return;
	// At most kMaxDeviceParams entries per list: past it an answer is dropped before it is
	// parsed or hashed (what is kept is what a change is judged by). An active Route replaces
	// its card device's entry, so only a new card device counts.
	auto full = [&](size_t size) {
		if (size < kMaxDeviceParams) return false;
		if (!d.paramsCutLogged) {
			d.paramsCutLogged = true;
			log::info(detail::kLog, "device {} lists more than {} entries in {}: the rest are left out", d.key, kMaxDeviceParams,
			          detail::paramName(id));
		}
		return true;
	};
	switch (id) {
	case SPA_PARAM_EnumProfile:
		if (full(d.newProfiles.size())) return;
		break;
	case SPA_PARAM_EnumRoute:
		if (full(d.newRoutes.size())) return;
		break;
	default: break;
	}
	std::optional<ProfileParam> profile;
	std::optional<RouteParam> route;
	if (id == SPA_PARAM_EnumProfile || id == SPA_PARAM_Profile) profile = parseProfile(param);
	else if (id == SPA_PARAM_EnumRoute || id == SPA_PARAM_Route) route = parseRoute(param);
	if (id == SPA_PARAM_Route && route) {
		auto same = [&](const RouteParam& x) { return x.device == route->device; };
		if (std::none_of(d.newActiveRoutes.begin(), d.newActiveRoutes.end(), same) && full(d.newActiveRoutes.size()))
			return;
	}
	if (param) detail::fnv1a(d.newParamHashes[id], param, SPA_POD_SIZE(param));
	switch (id) {
	case SPA_PARAM_EnumProfile:
		if (profile) d.newProfiles.push_back(std::move(*profile));
		break;
	case SPA_PARAM_Profile:
		if (profile) d.newProfile = std::move(*profile);
		break;
	case SPA_PARAM_EnumRoute:
		if (route) d.newRoutes.push_back(std::move(*route));
		break;
	case SPA_PARAM_Route:
		if (route) {
			// One active route per card device: a re-send replaces it at once (the volume of
			// route-backed nodes lives here), the list is settled at the next done.
			auto same = [&](const RouteParam& x) { return x.device == route->device; };
			std::erase_if(d.newActiveRoutes, same);
			d.newActiveRoutes.push_back(*route);
			if (d.complete) {
				std::erase_if(d.activeRoutes, same);
				if (d.activeRoutes.size() < kMaxDeviceParams) d.activeRoutes.push_back(std::move(*route));
				changes_.devices.insert(d.id);
			}
		}
		break;
	default: break;
	}
}

void Graph::commitDevice(Device& d) {
	for (uint32_t id: d.refreshing) {
		switch (id) {
		case SPA_PARAM_EnumProfile: d.profiles = std::move(d.newProfiles); break;
		case SPA_PARAM_Profile: d.profile = std::move(d.newProfile); break;
		case SPA_PARAM_EnumRoute: d.routes = std::move(d.newRoutes); break;
		case SPA_PARAM_Route: d.activeRoutes = std::move(d.newActiveRoutes); break;
		default: break;
		}
		uint64_t hash = d.newParamHashes.count(id) ? d.newParamHashes[id] : detail::kFnvOffset;
		auto last = d.paramHashes.find(id);
		bool same = last != d.paramHashes.end() && last->second == hash;
		bool announced = d.announced.erase(id) > 0;
		auto again = d.rereads.find(id);
		if (!same) {
			if (again != d.rereads.end())
				log::info(detail::kLog, "device {}: {} read again after an announced change: it had changed (PipeWire had "
				                "answered from a stale cache)",
				          d.id, detail::paramName(id));
			d.rereads.erase(id);
		} else if (announced || again != d.rereads.end()) {
			int attempt = again == d.rereads.end() ? 1 : again->second + 1;
			if (attempt > kMaxParamRereads) {
				log::debug(detail::kLog, "device {}: {} read again {} times, unchanged: kept as it is", d.id, detail::paramName(id),
				           kMaxParamRereads);
				d.rereads.erase(id);
			} else {
				// Debug only: a device may also announce a list whose bytes did not change.
				if (attempt == 1)
					log::debug(detail::kLog, "device {}: {} announced as changed and read unchanged: reading it again, "
					                 "in case PipeWire answered from a stale cache",
					           d.id, detail::paramName(id));
				d.rereads[id] = attempt;
				paramRereads_.emplace(d.id, id);
			}
		}
		d.paramHashes[id] = hash;
	}
	d.newParamHashes.clear();
	d.refreshing.clear();
	d.newProfiles.clear();
	d.newProfile.reset();
	d.newRoutes.clear();
	d.newActiveRoutes.clear();
}

int Graph::paramRereadAttempt() const {
	int first = 0;
	for (const auto& [device, param]: paramRereads_) {
		const Device* d = this->device(device);
		auto it = d ? d->rereads.find(param) : decltype(d->rereads)::const_iterator();
		if (d && it != d->rereads.end() && (first == 0 || it->second < first)) first = it->second;
	}
	return first;
}

void Graph::rereadParams() {
	auto pending = std::move(paramRereads_);
	paramRereads_.clear();
	for (const auto& [device, param]: pending) {
		auto it = devices_.find(device);
		if (it == devices_.end() || !it->second->proxy || !it->second->complete || !it->second->rereads.count(param))
			continue;
		requestEnumeration(*it->second, param);
	}
	// Outside PipeWire's dispatch: afterIterate may not run before the loop sleeps.
	if (syncWanted_ && !lost_) requestSync();
}

uint64_t Graph::readBackRoutes(uint32_t id) {
	auto it = devices_.find(id);
	if (it == devices_.end() || !it->second->proxy || !it->second->complete) return 0;
	requestEnumeration(*it->second, SPA_PARAM_Route);
	// A device waiting for a round: readBack holds while its waitGen is not 0, which only the
	// sync sent after its enumerations settles, so any generation still to come does.
	return it->second->waitGen == detail::kQueuedGen ? nextGen_ : it->second->waitGen;
}

bool Graph::readBack(uint32_t id, uint64_t gen) const {
	const Device* d = device(id);
	return d && gen != 0 && completedGen_ >= gen && d->waitGen == 0;
}

} // namespace qsd::pipewire
