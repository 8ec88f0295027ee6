// Renders the example bar offscreen against a real qsd and writes it to PNGs, so a person can
// look at what a shell shows:
//   qsd-qml-render-bar BAR.qml OUT.png [--expect a,b] [--absent c,d]
//                      [--click MENU=LABEL]... [--menu-expect MENU=LABEL,#NAME,...]...
// OUT.png is the bar; OUT-<menu>.png the bar with one of its menus open (each menu whose chip
// is shown); OUT-popups.png the bar with the windows it keeps open beside it (the notification
// popups), when there are any. --expect names the bar's parts that must be shown (their domain is fed), --absent
// those that must stay hidden. --click clicks the row labelled LABEL once MENU is open (opens a
// submenu); --menu-expect lists what MENU must show: texts, and #NAME for an item of that
// objectName (a checkbox mark). Every image shown must have loaded. Fails when a check fails or
// the bar is blank (no pixel variance).

#include "daemon_process.hpp"

#include <qcoreapplication.h>
#include <qelapsedtimer.h>
#include <qevent.h>
#include <qguiapplication.h>
#include <qimage.h>
#include <qpainter.h>
#include <qpainterpath.h>
#include <qqmlapplicationengine.h>
#include <qqmlengine.h>
#include <qquickitem.h>
#include <qquickwindow.h>

#include <algorithm>
#include <cstdio>
#include <functional>

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

void settle(int ms) { waitFor([] { return false; }, ms); }

double grayVariance(const QImage& image) {
	double sum = 0, sumSq = 0;
	auto n = static_cast<double>(image.width()) * image.height();
	for (int y = 0; y < image.height(); ++y)
		for (int x = 0; x < image.width(); ++x) {
			auto gray = qGray(image.pixel(x, y));
			sum += gray;
			sumSq += static_cast<double>(gray) * gray;
		}
	auto mean = sum / n;
	return sumSq / n - mean * mean;
}

QStringList visibleSections(QObject* bar) {
	QVariant shown;
	QMetaObject::invokeMethod(bar, "visibleSections", Q_RETURN_ARG(QVariant, shown));
	return shown.toStringList();
}

// The items of a window that are shown (visible, with every ancestor), depth first.
void collectShown(QQuickItem* item, QList<QQuickItem*>& out) {
	if (!item->isVisible() || item->opacity() <= 0) return;
	out.append(item);
	for (auto* child: item->childItems()) collectShown(child, out);
}

QList<QQuickItem*> shownItems(QQuickWindow* window) {
	QList<QQuickItem*> out;
	collectShown(window->contentItem(), out);
	return out;
}

// What a window shows: the texts of its text items, and "#name" for each named item.
QStringList shownParts(QQuickWindow* window) {
	QStringList out;
	for (auto* item: shownItems(window)) {
		if (item->inherits("QQuickText")) out.append(item->property("text").toString());
		if (!item->objectName().isEmpty()) out.append(QLatin1Char('#') + item->objectName());
	}
	return out;
}

// Images shown whose source did not load (Image.Ready is 1).
QStringList unloadedImages(QQuickWindow* window) {
	QStringList out;
	for (auto* item: shownItems(window))
		if (item->inherits("QQuickImageBase") && !item->property("source").toUrl().isEmpty() && item->property("status").toInt() != 1)
			out.append(item->property("source").toString());
	return out;
}

// Clicks the shown row (an item with a clicked() signal) whose text is `label`.
bool clickRow(QQuickWindow* window, const QString& label) {
	for (auto* item: shownItems(window)) {
		if (item->metaObject()->indexOfSignal("clicked()") < 0 || item->property("text").toString() != label) continue;
		auto at = item->mapToScene(QPointF(item->width() / 2, item->height() / 2));
		auto global = window->mapToGlobal(at.toPoint());
		QMouseEvent press(QEvent::MouseButtonPress, at, global, Qt::LeftButton, Qt::LeftButton, Qt::NoModifier);
		QGuiApplication::sendEvent(window, &press);
		QMouseEvent release(QEvent::MouseButtonRelease, at, global, Qt::LeftButton, Qt::NoButton, Qt::NoModifier);
		QGuiApplication::sendEvent(window, &release);
		return true;
	}
	return false;
}

// "menu=a,b" arguments.
void addMenuArg(QMap<QString, QStringList>& to, const QString& arg) {
	auto eq = arg.indexOf(QLatin1Char('='));
	if (eq > 0) to[arg.left(eq)] += arg.mid(eq + 1).split(QLatin1Char(','), Qt::SkipEmptyParts);
}

QString withSuffix(const QString& path, const QString& suffix) {
	auto dot = path.lastIndexOf(QLatin1Char('.'));
	return path.left(dot) + QLatin1Char('-') + suffix + path.mid(dot);
}

} // namespace

int main(int argc, char** argv) {
	QGuiApplication app(argc, argv);
	QStringList args = app.arguments().mid(1);
	QStringList expect, absent;
	QMap<QString, QStringList> clicks, menuExpect;
	for (int i = 0; i + 1 < args.size(); ++i) {
		if (args[i] == QStringLiteral("--expect")) expect = args.takeAt(i + 1).split(QLatin1Char(','), Qt::SkipEmptyParts), args.removeAt(i--);
		else if (args[i] == QStringLiteral("--absent")) absent = args.takeAt(i + 1).split(QLatin1Char(','), Qt::SkipEmptyParts), args.removeAt(i--);
		else if (args[i] == QStringLiteral("--click")) addMenuArg(clicks, args.takeAt(i + 1)), args.removeAt(i--);
		else if (args[i] == QStringLiteral("--menu-expect")) addMenuArg(menuExpect, args.takeAt(i + 1)), args.removeAt(i--);
	}
	if (args.size() != 2) {
		std::fprintf(stderr, "usage: %s BAR.qml OUT.png [--expect a,b] [--absent c,d] [--click MENU=LABEL] [--menu-expect MENU=a,#b]\n", argv[0]);
		return 2;
	}
	const auto out = args[1];
	QsdDaemon daemon;
	qputenv("QSD_SOCKET", daemon.socketPath().toUtf8());
	if (!daemon.start()) {
		std::fprintf(stderr, "cannot start %s\n", qPrintable(QsdDaemon::binary()));
		return 1;
	}

	QQmlApplicationEngine engine;
	engine.addImportPath(QStringLiteral(QSD_QML_IMPORT_DIR));
	engine.load(QUrl::fromLocalFile(args[0]));
	if (engine.rootObjects().isEmpty()) return 1;
	auto* bar = qobject_cast<QQuickWindow*>(engine.rootObjects().constFirst());
	if (!bar) return 1;

	auto* qsd = engine.singletonInstance<QObject*>(qmlTypeId("Qsd", 1, 0, "Qsd"));
	if (!qsd || !waitFor([qsd] { return qsd->property("connected").toBool(); }, 10000)) {
		std::fprintf(stderr, "the bar did not connect to qsd\n");
		return 1;
	}
	// The backends fill their domains in as their services answer.
	auto allShown = [&] {
		auto shown = visibleSections(bar);
		return std::all_of(expect.begin(), expect.end(), [&](const QString& s) { return shown.contains(s); });
	};
	waitFor(allShown, 20000);
	// Icons load asynchronously (a tray item's file:// URL).
	waitFor([bar] { return unloadedImages(bar).isEmpty(); }, 10000);
	settle(500);   // a few frames for the delegates
	auto shown = visibleSections(bar);
	std::printf("parts shown: %s\n", qPrintable(shown.join(QStringLiteral(", "))));
	int status = 0;
	for (const auto& s: expect)
		if (!shown.contains(s)) std::fprintf(stderr, "expected part not shown: %s\n", qPrintable(s)), status = 1;
	for (const auto& s: absent)
		if (shown.contains(s)) std::fprintf(stderr, "part shown without its domain: %s\n", qPrintable(s)), status = 1;
	for (const auto& source: unloadedImages(bar)) std::fprintf(stderr, "image not loaded: %s\n", qPrintable(source)), status = 1;

	auto image = bar->grabWindow();
	if (image.isNull() || !image.save(out)) {
		std::fprintf(stderr, "cannot grab or save the bar\n");
		return 1;
	}
	auto variance = grayVariance(image);
	std::printf("%s: %dx%d, gray variance %.1f\n", qPrintable(out), image.width(), image.height(), variance);
	// A blank window (one colour) has variance 0; text and chips give far more.
	if (variance <= 50.0) status = 1;

	// Windows the bar keeps open beside it (not its menus, which are popups): drawn with the
	// bar on a dark desktop.
	QList<QQuickWindow*> beside;
	for (auto* window: QGuiApplication::topLevelWindows())
		if (window != bar && window->isVisible() && window->type() != Qt::Popup)
			if (auto* w = qobject_cast<QQuickWindow*>(window)) beside.append(w);
	if (!beside.isEmpty()) {
		for (auto* window: beside) {
			waitFor([window] { return unloadedImages(window).isEmpty(); }, 10000);
			for (const auto& source: unloadedImages(window)) std::fprintf(stderr, "image not loaded: %s\n", qPrintable(source)), status = 1;
		}
		settle(300);
		int bottom = bar->height();
		for (auto* window: beside) bottom = std::max(bottom, window->y() - bar->y() + window->height());
		QImage picture(bar->width(), bottom + 10, QImage::Format_ARGB32);
		picture.fill(QColor(QStringLiteral("#0d0e14")));
		QPainter painter(&picture);
		painter.drawImage(0, 0, bar->grabWindow());
		for (auto* window: beside) {
			// Offscreen windows have no alpha: the desktop shows between the popups.
			auto shot = window->grabWindow();
			for (auto* item: shownItems(window)) {
				if (item->parentItem() != window->contentItem()) continue;
				for (auto* card: item->childItems()) {
					if (!card->isVisible()) continue;
					auto at = card->mapToScene(QPointF(0, 0));
					QPainterPath frame;
					frame.addRoundedRect(QRectF(window->x() - bar->x() + at.x(), window->y() - bar->y() + at.y(), card->width(),
					                            card->height()), 12, 12);
					painter.save();
					painter.setRenderHint(QPainter::Antialiasing);
					painter.setClipPath(frame);
					painter.drawImage(window->x() - bar->x(), window->y() - bar->y(), shot);
					painter.restore();
				}
			}
		}
		painter.end();
		auto file = withSuffix(out, QStringLiteral("popups"));
		if (!picture.save(file)) status = 1;
		std::printf("%s: the bar with %lld window(s) beside it\n", qPrintable(file), static_cast<long long>(beside.size()));
	}

	// The password prompt, as NetworkManager's request for secrets (to qsd's agent) opens it.
	if (shown.contains(QStringLiteral("network")) && daemon.drive(QStringLiteral("nm-ask-secrets"), {QStringLiteral("Neighbour")})[QStringLiteral("code")].toInt() != 0)
		std::fprintf(stderr, "NetworkManager's mock could not ask qsd for secrets\n"), status = 1;
	const QMap<QString, QString> menuOf {{QStringLiteral("wifi"), QStringLiteral("network")}, {QStringLiteral("profile"), QStringLiteral("profile")},
	                                     {QStringLiteral("audio"), QStringLiteral("volume")},  {QStringLiteral("tray"), QStringLiteral("tray")},
	                                     {QStringLiteral("media"), QStringLiteral("media")},
	                                     {QStringLiteral("notifications"), QStringLiteral("notifications")},
	                                     {QStringLiteral("bluetooth"), QStringLiteral("bluetooth")}};
	for (const auto& menu: bar->property("menus").toStringList()) {
		if (!shown.contains(menuOf.value(menu))) continue;
		if (menu != QStringLiteral("wifi")) bar->setProperty("openMenu", menu);
		QQuickWindow* popup = nullptr;
		waitFor([&] {
			for (auto* window: QGuiApplication::topLevelWindows())
				if (window != bar && window->isVisible() && window->type() == Qt::Popup) popup = qobject_cast<QQuickWindow*>(window);
			return popup != nullptr;
		}, 5000);
		if (!popup) {
			std::fprintf(stderr, "the %s menu did not open\n", qPrintable(menu));
			status = 1;
			continue;
		}
		settle(300);
		for (const auto& label: clicks.value(menu))
			if (!clickRow(popup, label)) std::fprintf(stderr, "the %s menu has no row %s to click\n", qPrintable(menu), qPrintable(label)), status = 1;
		// Everything expected is shown (a submenu the click opened may be filled by the
		// application first), and every image has loaded.
		const auto wanted = menuExpect.value(menu);
		auto complete = [&] {
			auto parts = shownParts(popup);
			return std::all_of(wanted.begin(), wanted.end(), [&](const QString& w) { return parts.contains(w); })
			       && unloadedImages(popup).isEmpty();
		};
		waitFor(complete, 10000);
		auto parts = shownParts(popup);
		for (const auto& w: wanted)
			if (!parts.contains(w)) std::fprintf(stderr, "the %s menu does not show %s\n", qPrintable(menu), qPrintable(w)), status = 1;
		for (const auto& source: unloadedImages(popup))
			std::fprintf(stderr, "the %s menu's image not loaded: %s\n", qPrintable(menu), qPrintable(source)), status = 1;
		settle(300);
		auto menuImage = popup->grabWindow();
		// The bar with the menu under it, on a dark desktop.
		QImage picture(bar->width(), bar->height() + 4 + popup->height() + 10, QImage::Format_ARGB32);
		picture.fill(QColor(QStringLiteral("#0d0e14")));
		QPainter painter(&picture);
		painter.drawImage(0, 0, bar->grabWindow());
		// Offscreen windows have no alpha: clip to the menu's rounded frame (MenuWindow.qml).
		QPainterPath frame;
		frame.addRoundedRect(QRectF(popup->x() - bar->x(), popup->y() - bar->y(), popup->width(), popup->height()), 12, 12);
		painter.setRenderHint(QPainter::Antialiasing);
		painter.setClipPath(frame);
		painter.drawImage(popup->x() - bar->x(), popup->y() - bar->y(), menuImage);
		painter.end();
		auto file = withSuffix(out, menu);
		if (!picture.save(file)) status = 1;
		std::printf("%s: the %s menu, %dx%d\n", qPrintable(file), qPrintable(menu), popup->width(), popup->height());
		bar->setProperty("openMenu", QString());
		waitFor([&] { return !popup->isVisible(); }, 5000);
	}
	return status;
}
