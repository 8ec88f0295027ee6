// Benchmark of the QML client against a real qsd; prints figures, asserts nothing.
//   latency: debug.set sent (through Qsd.call) -> the QML property's change signal, p50/p99
//            over N changes; the same change seen by a raw NDJSON subscriber for comparison.
//   memory:  RSS growth of a process whose mirror (JSON + nodes) holds a 10 000-leaf tree,
//            flat (one object) and nested (100 objects of 100), each in a fresh process.
//   wifi:    a Wi-Fi device with 64 access points (32 networks of 2) shown by list models with
//            delegates, as a bar's Wi-Fi menu does, while one access point's strength changes
//            10 times a second: the client's CPU time per change and the latency to the
//            strength property's signal (fresh process).
//   qsd-qml-bench [--changes N] [--wifi-seconds S]

#include "../tests/daemon_process.hpp"

#include <qcoreapplication.h>
#include <qeventloop.h>
#include <qelapsedtimer.h>
#include <qguiapplication.h>
#include <qjsengine.h>
#include <qmetaobject.h>
#include <qqmlcomponent.h>
#include <qqmlengine.h>
#include <qtimer.h>

#include <sys/resource.h>

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

class Probe: public QObject {
	Q_OBJECT

public:
	bool hit = false;
	Clock::time_point at;

public slots:
	void onChanged() {
		this->at = Clock::now();
		this->hit = true;
	}
};

bool waitFor(const std::function<bool()>& condition, int timeoutMs) {
	QElapsedTimer timer;
	timer.start();
	while (!condition()) {
		if (timer.elapsed() > timeoutMs) return false;
		QCoreApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents, 5);
	}
	return true;
}

long rssKiB() {
	std::ifstream status("/proc/self/status");
	std::string line;
	while (std::getline(status, line))
		if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
	return -1;
}

// Bytes in use on the heap (glibc): unlike RSS, not inflated by freed temporaries (the parsed
// 10 000-operation patch) that the allocator keeps. Blocks above the mmap threshold are not in
// uordblks; whether a large array lands there depends on what was freed before, so both count.
long heapBytes() {
	auto info = mallinfo2();
	return static_cast<long>(info.uordblks + info.hblkhd);
}

double percentile(std::vector<double> v, double p) {
	std::sort(v.begin(), v.end());
	auto index = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
	return v[std::min(index, v.size() - 1)];
}

void report(const char* what, const std::vector<double>& us) {
	std::printf("%-48s n=%zu  p50 %.0f us  p90 %.0f us  p99 %.0f us  max %.0f us\n", what, us.size(), percentile(us, 0.5),
	            percentile(us, 0.9), percentile(us, 0.99), *std::max_element(us.begin(), us.end()));
}

struct Client {
	QQmlEngine engine;
	QObject* holder = nullptr;
	QObject* qsd = nullptr;

	Client() {
		this->engine.addImportPath(QStringLiteral(QSD_QML_IMPORT_DIR));
		// The singleton as QML code gets it (this also loads the module's plugin).
		QQmlComponent component(&this->engine);
		component.setData("import QtQml\nimport Qsd\nQtObject { property QtObject qsd: Qsd }", QUrl());
		this->holder = component.create();
		if (!this->holder) qFatal("cannot import Qsd: %s", qPrintable(component.errorString()));
		this->qsd = this->holder->property("qsd").value<QObject*>();
	}
	void call(const QString& method, const QVariantMap& params) {
		QMetaObject::invokeMethod(this->qsd, "call", Q_ARG(QString, method), Q_ARG(QJSValue, this->engine.toScriptValue(params)),
		                          Q_ARG(QJSValue, QJSValue()));
	}
};

QObject* nodeOf(QObject* qsd, const QString& path) {
	// node() returns the node as a var (a QVariant holding the QObject*).
	QVariant out;
	QMetaObject::invokeMethod(qsd, "node", Q_RETURN_ARG(QVariant, out), Q_ARG(QString, path));
	return out.value<QObject*>();
}

int latency(QsdDaemon& daemon, int changes) {
	Client client;
	if (!waitFor([&] { return client.qsd->property("connected").toBool(); }, 10000)) return 1;
	daemon.rpc(QStringLiteral("debug.set"), {{QStringLiteral("path"), QStringLiteral("/debug/lat")},
	                                          {QStringLiteral("value"), QVariantMap {{QStringLiteral("v"), 0}, {QStringLiteral("other"), 0}}}});
	QObject* node = nullptr;
	if (!waitFor([&] { return (node = nodeOf(client.qsd, QStringLiteral("/debug/lat"))) != nullptr; }, 5000)) return 1;
	auto property = node->metaObject()->property(node->metaObject()->indexOfProperty("v"));
	Probe probe;
	QObject::connect(node, property.notifySignal(), &probe,
	                 probe.metaObject()->method(probe.metaObject()->indexOfSlot("onChanged()")));

	std::vector<double> us;
	us.reserve(static_cast<size_t>(changes));
	for (int i = 1; i <= changes; ++i) {
		probe.hit = false;
		auto t0 = Clock::now();
		client.call(QStringLiteral("debug.set"), {{QStringLiteral("path"), QStringLiteral("/debug/lat/v")}, {QStringLiteral("value"), i}});
		if (!waitFor([&] { return probe.hit; }, 5000)) {
			std::fprintf(stderr, "change %d never arrived\n", i);
			return 1;
		}
		us.push_back(std::chrono::duration<double, std::micro>(probe.at - t0).count());
	}
	report("debug.set -> QML property change signal", us);

	// The same round trip without QML: a raw subscriber on its own connection.
	QLocalSocket raw;
	raw.connectToServer(daemon.socketPath());
	if (!raw.waitForConnected(2000)) return 1;
	raw.write(R"({"jsonrpc":"2.0","id":1,"method":"tree.subscribe","params":{"paths":["/debug/raw"]}})" "\n");
	QByteArray buffer;
	auto readLine = [&](int timeoutMs) -> QByteArray {
		QElapsedTimer timer;
		timer.start();
		while (!buffer.contains('\n') && timer.elapsed() < timeoutMs) raw.waitForReadyRead(50), buffer += raw.readAll();
		auto n = buffer.indexOf('\n');
		if (n < 0) return {};
		auto line = buffer.left(n);
		buffer.remove(0, n + 1);
		return line;
	};
	readLine(2000);   // the subscribe result
	std::vector<double> rawUs;
	for (int i = 1; i <= changes; ++i) {
		auto t0 = Clock::now();
		raw.write(QStringLiteral(R"({"jsonrpc":"2.0","id":%1,"method":"debug.set","params":{"path":"/debug/raw","value":%1}})"
		                         "\n").arg(i + 1).toUtf8());
		raw.flush();
		for (;;) {
			auto line = readLine(5000);
			if (line.isEmpty()) return 1;
			if (line.contains("\"tree.changed\"")) break;
		}
		rawUs.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
	}
	report("debug.set -> tree.changed line (raw socket)", rawUs);
	return 0;
}

// One shape in this process: RSS before and after the mirror holds 10 000 leaves.
int memory(QsdDaemon& daemon, const QString& shape) {
	Client client;
	if (!waitFor([&] { return client.qsd->property("connected").toBool(); }, 10000)) return 1;
	waitFor([] { return false; }, 100);
	auto before = rssKiB();
	auto heapBefore = heapBytes();
	QElapsedTimer timer;
	if (shape == QStringLiteral("flat")) {
		// One batch of 10 000 adds under one object.
		timer.start();
		daemon.rpc(QStringLiteral("debug.flood"), {{QStringLiteral("path"), QStringLiteral("/debug/big")}, {QStringLiteral("count"), 10000},
		                                            {QStringLiteral("keys"), 10000}, {QStringLiteral("batch"), 10000}});
	} else {
		QVariantMap outer;
		for (int o = 0; o < 100; ++o) {
			QVariantMap inner;
			for (int k = 0; k < 100; ++k) inner.insert(QStringLiteral("k%1").arg(k), o * 100 + k);
			outer.insert(QStringLiteral("o%1").arg(o), inner);
		}
		timer.start();
		daemon.rpc(QStringLiteral("debug.set"), {{QStringLiteral("path"), QStringLiteral("/debug/big")}, {QStringLiteral("value"), outer}});
	}
	auto sentMs = timer.elapsed();   // the daemon answered: its batch is flushed and sent
	auto last = shape == QStringLiteral("flat") ? QStringLiteral("/debug/big") : QStringLiteral("/debug/big/o99");
	auto lastKey = shape == QStringLiteral("flat") ? "k9999" : "k99";
	auto ok = waitFor([&] {
		auto* node = nodeOf(client.qsd, last);
		return node && node->property(lastKey).isValid();
	}, 30000);
	if (!ok) return 1;
	auto applyMs = timer.elapsed();
	waitFor([] { return false; }, 100);
	auto after = rssKiB();
	auto heap = heapBytes() - heapBefore;
	std::printf("mirror of 10 000 leaves (%s): heap +%ld KiB (%.0f bytes/leaf), RSS +%ld KiB; daemon done after %lld ms, "
	            "client applied after %lld ms\n",
	            qPrintable(shape), heap / 1024, heap / 10000.0, after - before, static_cast<long long>(sentMs),
	            static_cast<long long>(applyMs));
	return 0;
}

// The shape of /network/devices (docs/backends/nm.md) under /debug, where the debug API may write.
QVariantMap wifiDevices() {
	auto ap = [](int n, int k) {
		return QVariantMap {{QStringLiteral("bssid"), QStringLiteral("02:00:00:00:%1:%2").arg(n, 2, 16, QLatin1Char('0')).arg(k, 2, 16, QLatin1Char('0'))},
		                    {QStringLiteral("frequency"), k == 0 ? 2437 : 5180},
		                    {QStringLiteral("band"), k == 0 ? QStringLiteral("2.4GHz") : QStringLiteral("5GHz")},
		                    {QStringLiteral("maxBitrate"), 270000},
		                    {QStringLiteral("strength"), 0.5},
		                    {QStringLiteral("active"), false}};
	};
	QVariantMap networks;
	for (int n = 0; n < 32; ++n) {
		QVariantMap aps;
		for (int k = 0; k < 2; ++k) {
			auto a = ap(n, k);
			aps.insert(a.value(QStringLiteral("bssid")).toString(), a);
		}
		auto name = QStringLiteral("net%1").arg(n, 2, 10, QLatin1Char('0'));
		networks.insert(name, QVariantMap {{QStringLiteral("name"), name},
		                                   {QStringLiteral("ssidHex"), QString::fromLatin1(name.toLatin1().toHex())},
		                                   {QStringLiteral("device"), QStringLiteral("wlan0")},
		                                   {QStringLiteral("state"), QStringLiteral("disconnected")},
		                                   {QStringLiteral("connected"), false},
		                                   {QStringLiteral("stateChanging"), false},
		                                   {QStringLiteral("known"), n < 3},
		                                   {QStringLiteral("visible"), true},
		                                   {QStringLiteral("signalStrength"), 0.5},
		                                   {QStringLiteral("security"), QStringLiteral("wpa2Psk")},
		                                   {QStringLiteral("accessPoints"), aps},
		                                   {QStringLiteral("profiles"), QVariantMap {}}});
	}
	QVariantMap wlan {{QStringLiteral("type"), QStringLiteral("wifi")},       {QStringLiteral("name"), QStringLiteral("wlan0")},
	                  {QStringLiteral("address"), QStringLiteral("11:22:33:44:55:66")},
	                  {QStringLiteral("state"), QStringLiteral("disconnected")}, {QStringLiteral("connected"), false},
	                  {QStringLiteral("nmManaged"), true},                     {QStringLiteral("autoconnect"), true},
	                  {QStringLiteral("scannerEnabled"), true},                {QStringLiteral("mode"), QStringLiteral("station")},
	                  {QStringLiteral("networks"), networks}};
	QVariantMap eth {{QStringLiteral("type"), QStringLiteral("wired")}, {QStringLiteral("name"), QStringLiteral("eth0")},
	                 {QStringLiteral("state"), QStringLiteral("connected")}, {QStringLiteral("connected"), true},
	                 {QStringLiteral("linkSpeed"), 1000},                  {QStringLiteral("hasLink"), true},
	                 {QStringLiteral("networks"), QVariantMap {}}};
	return {{QStringLiteral("wlan0"), wlan}, {QStringLiteral("eth0"), eth}};
}

double cpuSeconds() {
	rusage usage {};
	getrusage(RUSAGE_SELF, &usage);
	return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
	     + static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// A Wi-Fi menu over list models (devices, then the Wi-Fi device's networks), while one access
// point's strength changes at 10 Hz, sent by a raw connection so the client only applies.
int wifi(QsdDaemon& daemon, int seconds) {
	auto reply = daemon.rpc(QStringLiteral("debug.set"), {{QStringLiteral("path"), QStringLiteral("/debug/network")},
	                                                       {QStringLiteral("value"), QVariantMap {{QStringLiteral("devices"), wifiDevices()}}}});
	if (reply.contains(QStringLiteral("error"))) {
		std::fprintf(stderr, "debug.set failed: %s\n", qPrintable(QJsonDocument::fromVariant(reply).toJson()));
		return 1;
	}
	Client client;
	if (!waitFor([&] { return client.qsd->property("connected").toBool(); }, 10000)) { std::fprintf(stderr, "not connected\n"); return 1; }
	QQmlComponent menu(&client.engine);
	menu.setData(R"qml(
import QtQuick
import Qsd
Item {
    Repeater {
        model: Qsd.model("/debug/network/devices")
        delegate: Item {
            required property var model
            property string label: model.id + (model.node?.connected ? " (connected)" : "")
        }
    }
    Repeater {
        model: Qsd.model("/debug/network/devices/wlan0/networks")
        delegate: Item {
            required property var model
            property string label: model.node?.name ?? ""
            property real strength: model.node?.signalStrength ?? 0
            property bool lock: model.node?.security !== "open"
        }
    }
}
)qml", QUrl());
	std::unique_ptr<QObject> scene(menu.create());
	if (!scene) {
		std::fprintf(stderr, "%s\n", qPrintable(menu.errorString()));
		return 1;
	}
	auto apPath = [](int i) {
		auto n = i % 32, k = (i / 32) % 2;
		return QStringLiteral("/debug/network/devices/wlan0/networks/net%1/accessPoints/02:00:00:00:%2:%3")
		    .arg(n, 2, 10, QLatin1Char('0')).arg(n, 2, 16, QLatin1Char('0')).arg(k, 2, 16, QLatin1Char('0'));
	};
	if (!waitFor([&] { return nodeOf(client.qsd, apPath(63)) != nullptr; }, 10000)) {
		std::fprintf(stderr, "%s never arrived\n", qPrintable(apPath(63)));
		return 1;
	}
	waitFor([] { return false; }, 300);

	QLocalSocket raw;
	raw.connectToServer(daemon.socketPath());
	if (!raw.waitForConnected(2000)) return 1;
	QObject::connect(&raw, &QLocalSocket::readyRead, &raw, [&raw] { raw.readAll(); });

	// Timer-driven, so the process sleeps between changes and its CPU time is the client's work.
	Probe probe;
	auto slot = probe.metaObject()->method(probe.metaObject()->indexOfSlot("onChanged()"));
	std::vector<double> us;
	auto changes = seconds * 10;
	int sent = 0;
	bool failed = false;
	Clock::time_point t0;
	QMetaObject::Connection watching;
	QEventLoop loop;
	QTimer tick;
	tick.setInterval(100);
	auto record = [&] {
		if (sent == 0) return true;
		QObject::disconnect(watching);
		if (!probe.hit) {
			std::fprintf(stderr, "change %d did not arrive within 100 ms\n", sent);
			return false;
		}
		us.push_back(std::chrono::duration<double, std::micro>(probe.at - t0).count());
		return true;
	};
	QObject::connect(&tick, &QTimer::timeout, &loop, [&] {
		if (!record()) {
			failed = true;
			loop.quit();
			return;
		}
		if (sent == changes) {
			loop.quit();
			return;
		}
		auto* node = nodeOf(client.qsd, apPath(sent));
		watching = QObject::connect(node, node->metaObject()->property(node->metaObject()->indexOfProperty("strength")).notifySignal(),
		                            &probe, slot);
		probe.hit = false;
		t0 = Clock::now();
		raw.write(QStringLiteral(R"({"jsonrpc":"2.0","id":%1,"method":"debug.set","params":{"path":"%2/strength","value":%3}})" "\n")
		              .arg(sent + 1).arg(apPath(sent)).arg(0.6 + 0.005 * (sent % 50)).toUtf8());
		raw.flush();
		++sent;
	});
	auto cpu0 = cpuSeconds();
	tick.start();
	loop.exec();
	if (failed) return 1;
	auto cpu = cpuSeconds() - cpu0;
	report("AP strength -> QML property (64-AP device, 10/s)", us);
	std::printf("client CPU at 10 strength changes/s: %.0f us per change, %.2f %% of a core\n", cpu * 1e6 / changes,
	            cpu * 100.0 / (changes * 0.1));
	return 0;
}

} // namespace

int main(int argc, char** argv) {
	QGuiApplication app(argc, argv);
	int changes = 2000;
	int wifiSeconds = 20;
	bool wifiOnly = false;
	QString memoryShape;
	for (int i = 1; i < argc; ++i) {
		QString arg = QString::fromLocal8Bit(argv[i]);
		if (arg == QStringLiteral("--changes") && i + 1 < argc) changes = QString::fromLocal8Bit(argv[++i]).toInt();
		else if (arg == QStringLiteral("--wifi-seconds") && i + 1 < argc) wifiSeconds = QString::fromLocal8Bit(argv[++i]).toInt();
		else if (arg == QStringLiteral("--wifi")) wifiOnly = true;
		else if (arg == QStringLiteral("--memory") && i + 1 < argc) memoryShape = QString::fromLocal8Bit(argv[++i]);
	}

	QsdDaemon daemon;
	qputenv("QSD_SOCKET", daemon.socketPath().toUtf8());
	if (!daemon.start()) {
		std::fprintf(stderr, "cannot start %s\n", qPrintable(QsdDaemon::binary()));
		return 1;
	}
	if (!memoryShape.isEmpty()) return memory(daemon, memoryShape);
	if (wifiOnly) return wifi(daemon, wifiSeconds);

	std::printf("qsd QML client benchmark (qsd %s, Qt %s)\n", QSD_VERSION, qVersion());
	if (latency(daemon, changes) != 0) return 1;
	// Each memory figure in a fresh process, so nothing measured earlier is counted.
	for (const char* shape: {"flat", "nested"}) {
		QProcess child;
		child.setProcessChannelMode(QProcess::ForwardedChannels);
		child.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--memory"), QString::fromLatin1(shape)});
		if (!child.waitForFinished(120000) || child.exitCode() != 0) return 1;
	}
	QProcess child;
	child.setProcessChannelMode(QProcess::ForwardedChannels);
	child.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--wifi"), QStringLiteral("--wifi-seconds"), QString::number(wifiSeconds)});
	if (!child.waitForFinished(wifiSeconds * 1000 + 120000) || child.exitCode() != 0) return 1;
	return 0;
}

#include "bench_qml.moc"
