// Renders the example bar offscreen against a real qsd and writes it to a PNG, then fails
// when the image is blank (no pixel variance), so a person can look at what a shell shows.
//   qsd-qml-render-bar BAR.qml OUT.png

#include "daemon_process.hpp"

#include <qcoreapplication.h>
#include <qelapsedtimer.h>
#include <qguiapplication.h>
#include <qimage.h>
#include <qqmlapplicationengine.h>
#include <qqmlengine.h>
#include <qquickwindow.h>

#include <cmath>
#include <cstdio>

namespace {

bool waitFor(const std::function<bool()>& condition, int timeoutMs) {
	QElapsedTimer timer;
	timer.start();
	while (!condition()) {
		if (timer.elapsed() > timeoutMs) return false;
		QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
	}
	return true;
}

} // namespace

int main(int argc, char** argv) {
	QGuiApplication app(argc, argv);
	if (argc != 3) {
		std::fprintf(stderr, "usage: %s BAR.qml OUT.png\n", argv[0]);
		return 2;
	}
	QsdDaemon daemon;
	qputenv("QSD_SOCKET", daemon.socketPath().toUtf8());
	if (!daemon.start()) {
		std::fprintf(stderr, "cannot start %s\n", qPrintable(QsdDaemon::binary()));
		return 1;
	}
	// Something for the /debug section, as the demo writes.
	daemon.rpc(QStringLiteral("debug.set"), {{QStringLiteral("path"), QStringLiteral("/debug/load")}, {QStringLiteral("value"), 0.42}});
	daemon.rpc(QStringLiteral("debug.set"), {{QStringLiteral("path"), QStringLiteral("/debug/greeting")}, {QStringLiteral("value"), QStringLiteral("hello")}});
	daemon.rpc(QStringLiteral("debug.set"),
	           {{QStringLiteral("path"), QStringLiteral("/debug/media")},
	            {QStringLiteral("value"), QVariantMap {{QStringLiteral("title"), QStringLiteral("Song")}, {QStringLiteral("playing"), true}}}});

	QQmlApplicationEngine engine;
	engine.addImportPath(QStringLiteral(QSD_QML_IMPORT_DIR));
	engine.load(QUrl::fromLocalFile(QString::fromLocal8Bit(argv[1])));
	if (engine.rootObjects().isEmpty()) return 1;
	auto* window = qobject_cast<QQuickWindow*>(engine.rootObjects().constFirst());
	if (!window) return 1;

	auto* qsd = engine.singletonInstance<QObject*>(qmlTypeId("Qsd", 1, 0, "Qsd"));
	if (!qsd || !waitFor([qsd] { return qsd->property("connected").toBool(); }, 10000)) {
		std::fprintf(stderr, "the bar did not connect to qsd\n");
		return 1;
	}
	// Let the delegates of the snapshot render (a few frames).
	waitFor([] { return false; }, 300);

	auto image = window->grabWindow();
	if (image.isNull() || !image.save(QString::fromLocal8Bit(argv[2]))) {
		std::fprintf(stderr, "cannot grab or save the window\n");
		return 1;
	}
	double sum = 0, sumSq = 0;
	auto n = static_cast<double>(image.width()) * image.height();
	for (int y = 0; y < image.height(); ++y)
		for (int x = 0; x < image.width(); ++x) {
			auto gray = qGray(image.pixel(x, y));
			sum += gray;
			sumSq += static_cast<double>(gray) * gray;
		}
	auto mean = sum / n;
	auto variance = sumSq / n - mean * mean;
	std::printf("%s: %dx%d, gray mean %.1f, variance %.1f\n", argv[2], image.width(), image.height(), mean, variance);
	// A blank window (one colour) has variance 0; the bar's text and chips give far more.
	return variance > 50.0 ? 0 : 1;
}
