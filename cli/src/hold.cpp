#include "hold.hpp"

#include "render.hpp"

#include <qsd/protocol/domains.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace qsctl {

namespace {

bool starting(const json* backends, const std::string& id) {
	if (!backends || !backends->is_object()) return false;
	auto it = backends->find(id);
	if (it == backends->end() || !it->is_object()) return false;
	auto state = it->find("state");
	return state != it->end() && state->is_string() && *state == "starting";
}

} // namespace

std::string_view backendOfDomain(std::string_view domain) { return qsd::backendOfDomain(domain); }

std::vector<std::string> backendsOfPath(const std::string& path) {
	std::vector<std::string> out;
	if (path.empty()) {
		for (const auto& entry: qsd::kDomainBackends) out.emplace_back(entry.backend);
		return out;
	}
	auto slash = path.find('/', 1);
	auto domain = std::string_view(path).substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
	if (auto backend = backendOfDomain(domain); !backend.empty()) out.emplace_back(backend);
	return out;
}

void RestartHold::start(const std::vector<std::string>& paths, const json* backends, double wallNowSec, int64_t monoNowMs) {
	held_.clear();
	if (graceMs_ <= 0) return;
	for (const auto& path: paths) {
		Held h;
		h.deadline = std::numeric_limits<int64_t>::max();
		for (auto& id: backendsOfPath(path)) {
			if (!starting(backends, id)) continue;
			// The grace runs from when the backend started, so a daemon that has been starting
			// for a while is not waited for again in full.
			int64_t remaining = graceMs_;
			const auto& since = (*backends)[id].value("since", json());
			if (since.is_string()) {
				if (auto t = parseRfc3339(since.get<std::string>())) {
					auto elapsed = std::llround((wallNowSec - *t) * 1000.0);
					remaining -= std::clamp<int64_t>(elapsed, 0, graceMs_);
				}
			}
			if (remaining <= 0) continue;
			h.deadline = std::min(h.deadline, monoNowMs + remaining);
			h.backends.push_back(std::move(id));
		}
		if (!h.backends.empty()) held_[path] = std::move(h);
	}
}

bool RestartHold::update(const json* backends, int64_t monoNowMs) {
	bool released = false;
	for (auto it = held_.begin(); it != held_.end();) {
		auto& h = it->second;
		std::erase_if(h.backends, [&](const std::string& id) { return !starting(backends, id); });
		if (h.backends.empty() || monoNowMs >= h.deadline) {
			it = held_.erase(it);
			released = true;
		} else {
			++it;
		}
	}
	return released;
}

int RestartHold::timeoutMs(int64_t monoNowMs) const {
	if (held_.empty()) return -1;
	int64_t next = std::numeric_limits<int64_t>::max();
	for (const auto& [_, h]: held_) next = std::min(next, h.deadline);
	return int(std::clamp<int64_t>(next - monoNowMs, 1, std::numeric_limits<int>::max()));
}

} // namespace qsctl
