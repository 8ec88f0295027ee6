#pragma once
// A real qsd for the QML tests, the example renderer and the benchmark: started on a private
// socket with the debug API, driven through its own connection (rpc()) when a test must change
// the tree without going through the client under test.

#include <qdir.h>
#include <qelapsedtimer.h>
#include <qjsondocument.h>
#include <qlocalsocket.h>
#include <qobject.h>
#include <qprocess.h>
#include <qtemporarydir.h>
#include <qthread.h>
#include <qvariant.h>

#include <csignal>
#include <cstdio>
#include <sys/prctl.h>

class QsdDaemon: public QObject {
	Q_OBJECT
	/// The daemon's socket (also exported as QSD_SOCKET by the runners).
	Q_PROPERTY(QString socketPath READ socketPath CONSTANT)
	Q_PROPERTY(bool running READ running)

public:
	explicit QsdDaemon(QStringList extraArgs = {}, QObject* parent = nullptr)
	    : QObject(parent), mExtraArgs(std::move(extraArgs)) {
		this->mSocketPath = this->mDir.path() + QStringLiteral("/qsd.sock");
		// Backends for a run against services a harness started (tests/services/run_services.py):
		// QSD_QML_DAEMON_ARGS="--backends=nm,upower"; the daemon inherits their bus addresses.
		this->mExtraArgs += QProcess::splitCommand(qEnvironmentVariable("QSD_QML_DAEMON_ARGS"));
		// A daemon started by the caller (with its backends, on its private buses):
		// QSD_QML_EXTERNAL_DAEMON=1 and QSD_SOCKET. start() then only checks it is there.
		if (external()) this->mSocketPath = qEnvironmentVariable("QSD_SOCKET");
	}

	static bool external() { return qEnvironmentVariable("QSD_QML_EXTERNAL_DAEMON") == QStringLiteral("1"); }
	~QsdDaemon() override { this->stop(); }

	[[nodiscard]] QString socketPath() const { return this->mSocketPath; }
	[[nodiscard]] bool running() const { return this->mProcess && this->mProcess->state() == QProcess::Running; }

	static QString binary() {
		auto bin = qEnvironmentVariable("QSD_BIN");
		return bin.isEmpty() ? QStringLiteral("qsd") : bin;
	}

	/// Starts qsd and waits until its socket accepts connections.
	Q_INVOKABLE bool start() {
		if (external()) {
			QLocalSocket probe;
			probe.connectToServer(this->mSocketPath);
			return probe.waitForConnected(2000);
		}
		if (this->running()) return true;
		delete this->mProcess;
		this->mProcess = new QProcess(this);
		this->mProcess->setProcessChannelMode(QProcess::ForwardedErrorChannel);
		// The daemon dies with the test, even when the test crashes or is killed by a timeout.
		this->mProcess->setChildProcessModifier([] { prctl(PR_SET_PDEATHSIG, SIGTERM); });
		QStringList args {QStringLiteral("--backends="), QStringLiteral("--debug-api"), QStringLiteral("--socket"), this->mSocketPath};
		args += this->mExtraArgs;
		this->mProcess->start(binary(), args);
		if (!this->mProcess->waitForStarted(5000)) return false;
		QElapsedTimer timer;
		timer.start();
		while (timer.elapsed() < 10000) {
			QLocalSocket probe;
			probe.connectToServer(this->mSocketPath);
			if (probe.waitForConnected(100)) return true;
			QThread::msleep(10);
		}
		return false;
	}

	/// SIGKILL: the daemon dies without closing anything, as in a crash.
	Q_INVOKABLE void kill() {
		if (!this->mProcess) return;
		this->mProcess->kill();
		this->mProcess->waitForFinished(5000);
	}

	/// SIGTERM and wait; a daemon that does not stop has its stacks printed (gdb), then SIGKILL.
	Q_INVOKABLE void stop() {
		if (!this->running()) return;
		this->mProcess->terminate();
		if (this->mProcess->waitForFinished(5000)) return;
		printStacks(this->mProcess->processId());
		this->kill();
	}

	/// Every thread's stack of a stuck qsd on stderr, for the failure's output: a daemon that
	/// ignores SIGTERM is blocked somewhere its log cannot say.
	static void printStacks(qint64 pid) {
		QProcess gdb;
		gdb.setProcessChannelMode(QProcess::MergedChannels);
		gdb.start(QStringLiteral("gdb"), {QStringLiteral("-batch"), QStringLiteral("-p"), QString::number(pid),
		                                  QStringLiteral("-ex"), QStringLiteral("thread apply all bt")});
		if (!gdb.waitForFinished(60000)) {
			std::fprintf(stderr, "qsd (pid %lld) did not stop on SIGTERM; no stacks: %s\n", pid,
			             qPrintable(gdb.errorString()));
			return;
		}
		std::fprintf(stderr, "qsd (pid %lld) did not stop on SIGTERM within 5 s; its stacks:\n", pid);
		for (const auto& line: QString::fromLocal8Bit(gdb.readAll()).split(u'\n'))
			if (line.startsWith(u'#') || line.startsWith(QStringLiteral("Thread"))) std::fprintf(stderr, "%s\n", qPrintable(line));
	}

	/// One request on a connection of its own, synchronously: {result} or {error}.
	Q_INVOKABLE QVariantMap rpc(const QString& method, const QVariantMap& params = {}, int timeoutMs = 30000) {
		QLocalSocket socket;
		socket.connectToServer(this->mSocketPath);
		if (!socket.waitForConnected(2000)) return {{QStringLiteral("error"), QStringLiteral("cannot connect")}};
		QVariantMap request {{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("id"), 1},
		                     {QStringLiteral("method"), method}, {QStringLiteral("params"), params}};
		socket.write(QJsonDocument::fromVariant(request).toJson(QJsonDocument::Compact) + '\n');
		socket.flush();
		QByteArray buffer;
		QElapsedTimer timer;
		timer.start();
		while (!buffer.contains('\n') && timer.elapsed() < timeoutMs) {
			if (socket.waitForReadyRead(100)) buffer += socket.readAll();
			if (socket.state() != QLocalSocket::ConnectedState && socket.bytesAvailable() == 0) break;
		}
		if (!buffer.contains('\n'))
			return {{QStringLiteral("error"), timer.elapsed() >= timeoutMs
			                                          ? QStringLiteral("no answer within %1 ms").arg(timeoutMs)
			                                          : QStringLiteral("the connection closed without an answer")}};
		auto line = buffer.left(buffer.indexOf('\n'));
		auto reply = QJsonDocument::fromJson(line).toVariant().toMap();
		reply.remove(QStringLiteral("jsonrpc"));
		reply.remove(QStringLiteral("id"));
		return reply;
	}

	/// Runs an action of the harness's service driver ($QSD_QML_DRIVER ACTION ARGS...), e.g. to
	/// change a mock service: {code, output}; code -1 when there is no driver.
	Q_INVOKABLE QVariantMap drive(const QString& action, const QStringList& args = {}, int timeoutMs = 60000) {
		auto command = QProcess::splitCommand(qEnvironmentVariable("QSD_QML_DRIVER"));
		if (command.isEmpty()) return {{QStringLiteral("code"), -1}, {QStringLiteral("output"), QStringLiteral("no QSD_QML_DRIVER")}};
		QProcess driver;
		driver.setProcessChannelMode(QProcess::MergedChannels);
		auto program = command.takeFirst();
		driver.start(program, command + QStringList {action} + args);
		if (!driver.waitForFinished(timeoutMs)) {
			driver.kill();
			driver.waitForFinished(2000);
			return {{QStringLiteral("code"), -2}, {QStringLiteral("output"), QStringLiteral("timed out")}};
		}
		auto output = QString::fromUtf8(driver.readAll()).trimmed();
		return {{QStringLiteral("code"), driver.exitStatus() == QProcess::NormalExit ? driver.exitCode() : -3},
		        {QStringLiteral("output"), output}};
	}

private:
	QTemporaryDir mDir;
	QString mSocketPath;
	QStringList mExtraArgs;
	QProcess* mProcess = nullptr;
};
