#include "peaks.hpp"

#include "../../log.hpp"
#include "mapping.hpp"
#include "pod.hpp"

#include <pipewire/pipewire.h>
#include <spa/param/audio/format-utils.h>
#include <spa/param/param.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace qsd::pipewire {

PeakStream::PeakStream(pw_core* core, const std::string& target, bool captureSink, const std::vector<uint32_t>& positions)
    : channels_(uint32_t(positions.size())), positions_(positions), peaks_(positions.size(), 0.0f) {
	pw_properties* props = pw_properties_new(PW_KEY_MEDIA_TYPE, "Audio", PW_KEY_MEDIA_CATEGORY, "Monitor",
	                                         PW_KEY_MEDIA_ROLE, "DSP", PW_KEY_NODE_NAME, "qsd.peaks",
	                                         PW_KEY_NODE_DESCRIPTION, "qsd level meter", PW_KEY_TARGET_OBJECT,
	                                         target.c_str(), PW_KEY_STREAM_MONITOR, "true", PW_KEY_NODE_PASSIVE, "true",
	                                         PW_KEY_NODE_DONT_RECONNECT, "true", nullptr);
	if (captureSink) pw_properties_set(props, PW_KEY_STREAM_CAPTURE_SINK, "true");
	stream_ = pw_stream_new(core, "qsd peaks", props);   // takes props
	if (!stream_) {
		error_ = std::string("pw_stream_new failed: ") + std::strerror(errno);
		return;
	}
	static const pw_stream_events events = {
	    .version = PW_VERSION_STREAM_EVENTS,
	    .state_changed = &PeakStream::onStateChanged,
	    .param_changed = &PeakStream::onParamChanged,
	    .process = &PeakStream::onProcess,
	};
	pw_stream_add_listener(stream_, &listener_, &events, this);
	uint8_t buffer[1024];
	spa_pod_builder b{};
	spa_pod_builder_init(&b, buffer, sizeof buffer);
	const spa_pod* params[1] = {buildCaptureFormat(b, positions)};
	// No PW_STREAM_FLAG_RT_PROCESS: process runs on qsd's loop, not on libpipewire's data thread.
	int r = pw_stream_connect(stream_, PW_DIRECTION_INPUT, PW_ID_ANY,
	                          pw_stream_flags(PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS), params, 1);
	if (r < 0) error_ = std::string("pw_stream_connect failed: ") + std::strerror(-r);
}

PeakStream::~PeakStream() {
	if (!stream_) return;
	spa_hook_remove(&listener_);
	pw_stream_destroy(stream_);
}

std::optional<std::vector<float>> PeakStream::take(uint64_t nowUs, uint64_t silenceUs) {
	if (buffers_ == 0) {
		if (lastData_ == 0) lastData_ = nowUs;
		if (zeroed_ || nowUs - lastData_ < silenceUs) return std::nullopt;
		zeroed_ = true;
		return std::vector<float>(peaks_.size(), 0.0f);
	}
	std::vector<float> out = peaks_;
	std::fill(peaks_.begin(), peaks_.end(), 0.0f);
	buffers_ = 0;
	lastData_ = nowUs;
	zeroed_ = false;
	return out;
}

void PeakStream::onStateChanged(void* data, pw_stream_state, pw_stream_state state, const char* error) noexcept {
	auto* self = static_cast<PeakStream*>(data);
	try {
		if (state == PW_STREAM_STATE_PAUSED || state == PW_STREAM_STATE_STREAMING) self->connected_ = true;
		if (state == PW_STREAM_STATE_ERROR) self->error_ = error ? error : "stream error";
		if (state == PW_STREAM_STATE_UNCONNECTED && self->connected_ && self->error_.empty())
			self->error_ = "the level meter was disconnected";
	} catch (const std::exception& e) {
		log::warning("pipewire", "level meter state: {}", e.what());
	}
}

void PeakStream::onParamChanged(void* data, uint32_t id, const spa_pod* param) noexcept {
	auto* self = static_cast<PeakStream*>(data);
	try {
		if (id != SPA_PARAM_Format || !param) return;
		spa_audio_info info{};
		if (spa_format_parse(param, &info.media_type, &info.media_subtype) < 0) return;
		if (info.media_type != SPA_MEDIA_TYPE_audio || info.media_subtype != SPA_MEDIA_SUBTYPE_raw) return;
		if (spa_format_audio_raw_parse(param, &info.info.raw) < 0) return;
		self->channels_ = info.info.raw.channels;
		self->peaks_.assign(self->channels_, 0.0f);
		self->positions_.assign(self->channels_, SPA_AUDIO_CHANNEL_UNKNOWN);
		if (!(info.info.raw.flags & SPA_AUDIO_FLAG_UNPOSITIONED))
			for (uint32_t i = 0; i < self->channels_ && i < SPA_AUDIO_MAX_CHANNELS; ++i)
				self->positions_[i] = info.info.raw.position[i];
	} catch (const std::exception& e) {
		log::warning("pipewire", "level meter format: {}", e.what());
	}
}

void PeakStream::onProcess(void* data) noexcept {
	auto* self = static_cast<PeakStream*>(data);
	try {
		pw_buffer* b = pw_stream_dequeue_buffer(self->stream_);
		if (!b) return;
		spa_buffer* buf = b->buffer;
		if (buf && buf->n_datas > 0 && buf->datas[0].data && buf->datas[0].chunk && self->channels_ > 0) {
			const spa_data& d = buf->datas[0];
			uint32_t offset = std::min(d.chunk->offset, d.maxsize);
			uint32_t size = std::min(d.chunk->size, d.maxsize - offset);
			const auto* samples = reinterpret_cast<const float*>(static_cast<const uint8_t*>(d.data) + offset);
			size_t frames = size / (sizeof(float) * self->channels_);
			accumulatePeaks(samples, frames, self->channels_, self->peaks_);
			++self->buffers_;
		}
		pw_stream_queue_buffer(self->stream_, b);
	} catch (const std::exception& e) {
		log::warning("pipewire", "level meter buffer: {}", e.what());
	}
}

} // namespace qsd::pipewire
