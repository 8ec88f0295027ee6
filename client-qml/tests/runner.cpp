// Runs the Qt Quick tests (tst_*.qml) against a real qsd started here on a private socket:
// QSD_SOCKET points the Qsd singleton at it, and the `QsdDaemon` context property lets a test
// kill, restart and drive the daemon.

#include "daemon_process.hpp"

#include <qqmlcontext.h>
#include <qqmlengine.h>
#include <quicktest.h>

class Setup: public QObject {
	Q_OBJECT

public slots:
	void applicationAvailable() {
		this->mDaemon = new QsdDaemon({}, this);
		qputenv("QSD_SOCKET", this->mDaemon->socketPath().toUtf8());
		if (!this->mDaemon->start()) qFatal("cannot start %s", qPrintable(QsdDaemon::binary()));
	}

	void qmlEngineAvailable(QQmlEngine* engine) {
		engine->addImportPath(QStringLiteral(QSD_QML_IMPORT_DIR));
		engine->rootContext()->setContextProperty(QStringLiteral("QsdDaemon"), this->mDaemon);
	}

	void cleanupTestCase() { this->mDaemon->stop(); }

private:
	QsdDaemon* mDaemon = nullptr;
};

QUICK_TEST_MAIN_WITH_SETUP(qsd_qml, Setup)

#include "runner.moc"
