// Views of /audio derived from its nodes and links, so that a client watches one path rather
// than following keys: /audio/sink and /audio/source, the current defaults' volume;
// /audio/privacy, the streams capturing the microphone, the camera or the screen. They are
// recomputed after every batch of changes, in the same tree batch as the changes they follow;
// the tree drops writes that change nothing.

#include "pipewire_backend.hpp"

#include <qsd/protocol/mirror.hpp>

#include <array>
#include <utility>

namespace qsd::pipewire {

void PipewireBackend::publishViews() {
	publishDefaultNode("sink", "defaultAudioSink");
	publishDefaultNode("source", "defaultAudioSource");
	publishPrivacy();
}

void PipewireBackend::publishDefaultNode(const char* field, const char* defaultField) {
	json value = nullptr;
	auto key = defaults_.find(defaultField);
	const Node* n = key != defaults_.end() && key->is_string() ? nodeByKey(key->get<std::string>()) : nullptr;
	if (n) {
		json audio = nullptr;
		if (isAudio(nodeType(n->props)))
			if (auto src = volumeSource(*n); src.state) audio = audioJson(*src.state);
		value = {{"node", n->key},
		         {"id", n->id},
		         {"description", propString(n->props, "node.description")},
		         {"volume", audio.is_null() ? json(nullptr) : audio["volume"]},
		         {"volumes", audio.is_null() ? json(nullptr) : audio["volumes"]},
		         {"muted", audio.is_null() ? json(nullptr) : audio["muted"]}};
	}
	context_.tree.set(pointer::join(kRoot, field), std::move(value));
}

void PipewireBackend::publishPrivacy() {
	// By kind, the consumers in the order of their serials (one entry however many links).
	std::array<std::set<std::pair<uint64_t, uint32_t>>, 4> users;
	for (const auto& [_, l]: graph_->links()) {
		// A link in error or unlinked (negative states) carries nothing.
		if (!l->complete || !l->haveInfo || l->state < 0) continue;
		const Node* source = graph_->node(l->outputNode);
		const Node* consumer = graph_->node(l->inputNode);
		if (!source || !consumer || !published(*source) || !published(*consumer) || isMonitor(*consumer)) continue;
		std::string api;
		auto deviceId = propInt(source->props, "device.id");
		if (auto it = source->props.find("device.api"); it != source->props.end()) api = it->second;
		else if (const Device* d = deviceId ? graph_->device(uint32_t(*deviceId)) : nullptr)
			if (auto da = d->props.find("device.api"); da != d->props.end()) api = da->second;
		Capture capture = captureOf(nodeType(source->props), api, deviceId.has_value(), nodeType(consumer->props));
		if (capture != Capture::None) users[size_t(capture)].emplace(consumer->serial, consumer->id);
	}
	json privacy = json::object();
	for (Capture capture: {Capture::Microphone, Capture::Camera, Capture::Screencast}) {
		json list = json::array();
		for (const auto& [serial, id]: users[size_t(capture)]) {
			const Node* n = graph_->node(id);
			const Client* c = nullptr;
			if (auto cid = propInt(n->props, "client.id")) c = graph_->client(uint32_t(*cid));
			list.push_back({{"node", n->key}, {"application", applicationJson(n->props, c ? &c->props : nullptr)}});
		}
		privacy[toString(capture)] = std::move(list);
	}
	context_.tree.set(pointer::join(kRoot, "privacy"), std::move(privacy));
}

} // namespace qsd::pipewire
