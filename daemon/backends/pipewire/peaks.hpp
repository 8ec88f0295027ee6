#pragma once
// One level meter: a capture pw_stream on a node (a sink's monitor, or a source / stream
// itself), as Quickshell's PwNodePeakMonitor opens it. Its process callback runs on qsd's loop
// (no PW_STREAM_FLAG_RT_PROCESS) and only keeps the largest sample per channel; the backend
// takes those maxima on its own timer, so the tree changes at most at the timer's rate.

#include <pipewire/stream.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qsd::pipewire {

class PeakStream {
public:
	// target: the node's object.serial; captureSink: capture a sink's monitor rather than the
	// node's own output; positions: the node's channel map (empty: let PipeWire choose).
	PeakStream(pw_core* core, const std::string& target, bool captureSink, const std::vector<uint32_t>& positions);
	~PeakStream();
	PeakStream(const PeakStream&) = delete;
	PeakStream& operator=(const PeakStream&) = delete;

	[[nodiscard]] bool ok() const { return stream_ != nullptr; }
	// The stream exists on the server (paused or streaming).
	[[nodiscard]] bool connected() const { return connected_; }
	[[nodiscard]] const std::string& error() const { return error_; }
	[[nodiscard]] uint32_t channels() const { return channels_; }
	// The SPA_AUDIO_CHANNEL_* of each channel: of the format negotiated once it is, else the map
	// asked for (SPA_AUDIO_CHANNEL_UNKNOWN for a channel without a position).
	[[nodiscard]] const std::vector<uint32_t>& positions() const { return positions_; }
	// The per-channel maxima (0..1) of the buffers since the last call; nullopt when none came
	// (a graph cycle can be longer than the backend's period: the meter holds its value), and
	// zeros once nothing came for `silenceUs` (the node stopped).
	[[nodiscard]] std::optional<std::vector<float>> take(uint64_t nowUs, uint64_t silenceUs);

private:
	static void onStateChanged(void* data, pw_stream_state old, pw_stream_state state, const char* error) noexcept;
	static void onParamChanged(void* data, uint32_t id, const spa_pod* param) noexcept;
	static void onProcess(void* data) noexcept;

	pw_stream* stream_ = nullptr;
	spa_hook listener_{};
	uint32_t channels_;
	std::vector<uint32_t> positions_;
	std::vector<float> peaks_;
	uint32_t buffers_ = 0;        // since the last take
	uint64_t lastData_ = 0;       // when the last take had buffers
	bool zeroed_ = false;
	bool connected_ = false;
	std::string error_;
};

} // namespace qsd::pipewire
