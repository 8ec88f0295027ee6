// In-process cost of the tree against its size: flushing one batch (1 leaf, 1% of the leaves)
// and serializing a whole-tree snapshot answer (tree.get ""), as the daemon does it.
//
// Tree shape: /bench/o<i>/p<j>, objects of 10 leaves (like devices with their properties).
// A flush is measured with no observer (patch building only) and with one whole-tree
// subscriber whose tree.changed line is built the way a client session builds it (PathFilter
// + rpc::toLine), which is the per-subscriber part of a fan-out.

#include "bench_util.hpp"

#include "event_loop.hpp"
#include "log.hpp"
#include "server/subscription.hpp"
#include "tree.hpp"

#include <qsd/protocol/jsonrpc.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using bench::json;
using bench::nowNs;
using bench::percentile;

std::string leaf(int i) { return "/bench/o" + std::to_string(i / 10) + "/p" + std::to_string(i % 10); }

struct Row {
	double p50, p99;
};

Row summarize(const std::vector<double>& us) { return {percentile(us, 50), percentile(us, 99)}; }

} // namespace

int main(int argc, char** argv) {
	bool quick = bench::quickMode(argc, argv);
	std::vector<int> sizes = quick ? std::vector<int>{100, 1000} : std::vector<int>{100, 1000, 10000, 100000};
	qsd::log::setVerbose(false);

	std::printf("# tree: flush one batch and serialize a snapshot, against tree size (in-process, µs)\n");
	std::printf("%8s | %-24s | %-24s | %-24s | %-24s | %-24s | %s\n", "leaves", "set+flush 1 leaf p50/p99",
	            "set+flush 1% p50/p99", "+1 subscriber 1 leaf", "+1 subscriber 1%", "tree.get \"\" toLine",
	            "snapshot bytes");
	std::mt19937 rng(42);
	for (int n: sizes) {
		qsd::EventLoop loop;
		qsd::Tree tree(loop);
		{
			json obj = json::object();
			for (int i = 0; i < n; ++i) obj["o" + std::to_string(i / 10)]["p" + std::to_string(i % 10)] = i;
			tree.set("/bench", std::move(obj));
			tree.flush();
		}
		int reps = quick ? 20 : (n >= 100000 ? 200 : 2000);
		int onePercent = std::max(1, n / 100);
		std::uniform_int_distribution<int> pick(0, n - 1);
		int64_t value = n;

		auto measure = [&](int touched) {
			std::vector<double> us;
			us.reserve(size_t(reps));
			for (int r = 0; r < reps; ++r) {
				std::vector<std::string> paths;
				for (int k = 0; k < touched; ++k) paths.push_back(leaf(pick(rng)));
				auto t0 = nowNs();
				for (const auto& p: paths) tree.set(p, ++value);
				tree.flush();
				us.push_back(double(nowNs() - t0) / 1000.0);
			}
			return summarize(us);
		};

		Row one = measure(1);
		Row pct = measure(onePercent);
		// One whole-tree subscriber, as a client session serves it.
		Row subOne{}, subPct{};
		{
			qsd::PathFilter filter({""}, tree.root());
			size_t bytes = 0;
			auto obs = tree.observe([&](uint64_t revision, const json& patch) {
				json ops = json::array();
				filter.filter(patch, tree.root(), ops);
				auto line = qsd::rpc::toLine(qsd::rpc::makeNotification(
				    "tree.changed", {{"subscription", 1}, {"revision", revision}, {"changes", std::move(ops)}}));
				bytes += line.size();
			});
			subOne = measure(1);
			subPct = measure(onePercent);
			if (bytes == 0) bench::die("the subscriber saw nothing");
		}
		// tree.get "": the answer line holding the whole tree, written from the tree as the daemon
		// writes it (core_methods.cpp: Responder::beginResult, rpc::JsonWriter, endResult).
		std::vector<double> ser;
		size_t snapBytes = 0;
		int serReps = quick ? 5 : (n >= 100000 ? 20 : (n >= 10000 ? 100 : 1000));
		for (int r = 0; r < serReps; ++r) {
			auto t0 = nowNs();
			auto line = qsd::rpc::resultHead(1);
			qsd::rpc::JsonWriter(line).raw(R"({"revision":)").value(tree.revision()).raw(R"(,"value":)").value(tree.root()).raw("}}\n");
			ser.push_back(double(nowNs() - t0) / 1000.0);
			snapBytes = line.size();
		}
		Row s = summarize(ser);
		auto cell = [](Row r) {
			char b[64];
			std::snprintf(b, sizeof b, "%.1f / %.1f", r.p50, r.p99);
			return std::string(b);
		};
		std::printf("%8d | %-24s | %-24s | %-24s | %-24s | %-24s | %zu\n", n, cell(one).c_str(),
		            (cell(pct) + " (" + std::to_string(onePercent) + ")").c_str(), cell(subOne).c_str(), cell(subPct).c_str(),
		            cell(s).c_str(), snapBytes);
		std::fflush(stdout);
	}
	return 0;
}
