#include "backend.hpp"

#include <array>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

namespace qsd {

const char* toString(BackendState state) {
	switch (state) {
	case BackendState::Starting: return "starting";
	case BackendState::Running: return "running";
	case BackendState::Unavailable: return "unavailable";
	case BackendState::Failed: return "failed";
	case BackendState::Stopped: return "stopped";
	}
	return "unknown";
}

std::string nowRfc3339() {
	auto now = std::chrono::system_clock::now();
	auto secs = std::chrono::system_clock::to_time_t(now);
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
	std::tm tm{};
	gmtime_r(&secs, &tm);
	char buf[32];
	std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
	return fmt::format("{}.{:03d}Z", buf, int(ms));
}

void Backend::setState(BackendState state, std::string error) {
	if (state == state_ && error == error_) return;
	state_ = state;
	error_ = std::move(error);
	nlohmann::json entry = {{"state", toString(state)}, {"since", nowRfc3339()},
	                        {"error", error_.empty() ? nlohmann::json(nullptr) : nlohmann::json(error_)}};
	context_.tree.set("/daemon/backends/" + std::string(id()), std::move(entry));
}

void Backend::emitEvent(const std::string& topic, const nlohmann::json& data) { context_.server.emitEvent(topic, data); }

std::span<const BackendInfo> builtinBackends() {
	static const auto table = std::to_array<BackendInfo>({
#ifdef QSD_WITH_NM
	    {"nm", createNmBackend},
#endif
#ifdef QSD_WITH_UPOWER
	    {"upower", createUpowerBackend},
#endif
#ifdef QSD_WITH_PIPEWIRE
	    {"pipewire", createPipewireBackend},
#endif
#ifdef QSD_WITH_TRAY
	    {"tray", createTrayBackend},
#endif
#ifdef QSD_WITH_WAYLAND
	    {"wayland", createWaylandBackend},
#endif
	    {"", nullptr},
	});
	// The sentinel keeps the array non-empty when no backend is compiled in.
	return std::span<const BackendInfo>(table.data(), table.size() - 1);
}

} // namespace qsd
