import QtQuick
import QtQuick.Window
import QtTest
import Qsd
import "../../examples/bar"

// /notifications from a real qsd (the session's notification server) and an application that
// sends notifications whenever a server takes the name (run_services.py: a closed reminder, a
// chat message with an avatar, a mail with two actions, a critical battery warning), through the
// example bar's bell and popups. Clicks are checked where they land: in the tree (the item
// leaves, and history says why).
TestCase {
    id: test
    name: "Notifications"
    when: windowShown

    Window {
        id: bar
        width: 1000
        height: 34
        visible: true
        NotificationChip {
            id: bell
            x: 900
            y: 4
        }
    }
    NotificationPopups {
        id: popups
        bar: bar
    }

    function find(item, test) {
        if (!item || !item.visible) return null
        if (test(item)) return item
        for (var i = 0; i < item.children.length; ++i) {
            var found = find(item.children[i], test)
            if (found) return found
        }
        return null
    }
    function card(summary: string) {
        return find(popups.contentItem, function(i) { return i.notification !== undefined && i.notification !== null
                                                             && i.notification.summary === summary })
    }
    function idOf(summary: string) {
        var n = (Qsd.notifications?.items?.values ?? []).find(function(x) { return x.summary === summary })
        return n ? n.id : 0
    }
    function historyEntry(id) {
        return Qsd.notifications?.history?.get(String(id)) ?? null
    }

    function test_1_popupsNewestFirst() {
        tryVerify(function() { return popups.visible && popups.shown.length === 3 }, 20000, "three popups")
        compare(popups.shown.map(function(n) { return n.summary }), ["Battery low", "Weekly report", "Ann"])
        compare(bell.count, 3)
        // The critical one never expires; the mail's bar runs down to expiresAt.
        var battery = card("Battery low")
        verify(battery.critical)
        verify(!find(battery, function(i) { return i.objectName === "timeLeft" }))
        var timeLeft = find(card("Weekly report"), function(i) { return i.objectName === "timeLeft" })
        verify(timeLeft)
        verify(timeLeft.width > 0)
        // Images are files qsd wrote: the avatar came as pixels.
        var avatar = find(card("Ann"), function(i) { return i.objectName === "notificationImage" })
        tryVerify(function() { return avatar.status === Image.Ready }, 10000, "the avatar loaded")
        verify(String(avatar.source).indexOf("file://") === 0)
    }

    function test_2_dismissWithTheCross() {
        var id = idOf("Ann")
        verify(id > 0)
        var cross = find(card("Ann"), function(i) { return i.objectName === "dismiss" })
        mouseClick(cross)
        tryVerify(function() { return historyEntry(id) !== null }, 10000, "Ann in history")
        compare(historyEntry(id).closeReason, QsdNotifications.closeReason.dismissed)
        tryCompare(bell, "count", 2)
        verify(!card("Ann"))
    }

    function test_3_anActionButton() {
        var id = idOf("Weekly report")
        var button = find(card("Weekly report"), function(i) { return i.modelData !== undefined && i.modelData.key === "archive" })
        verify(button)
        mouseClick(button)
        tryVerify(function() { return historyEntry(id) !== null }, 10000, "the mail in history")
        compare(historyEntry(id).closeReason, QsdNotifications.closeReason.dismissed)
        compare(popups.shown.map(function(n) { return n.summary }), ["Battery low"])
    }

    function test_4_doNotDisturbOnTheBell() {
        verify(!bell.dnd)
        Qsd.call("notifications.setDnd", { enabled: true })
        tryVerify(function() { return bell.dnd }, 10000)
        Qsd.call("notifications.setDnd", { enabled: false })
        tryVerify(function() { return !bell.dnd }, 10000)
    }

    function test_5_aProgressUpdatedInPlace() {
        var first = QsdDaemon.drive("notify-value", ["Volume", "volume", "40"])
        compare(first.code, 0, first.output)
        tryVerify(function() { return card("Volume") !== null }, 10000, "the volume popup")
        var bar = find(card("Volume"), function(i) { return i.objectName === "progress" })
        verify(bar)
        var fill = bar.children[0].children[0]
        tryVerify(function() { return Math.abs(fill.width / bar.width - 0.4) < 0.01 }, 10000, "40 %")
        // The script's next key press: the same notification, the same card, a longer bar.
        var again = QsdDaemon.drive("notify-value", ["Volume", "volume", "70"])
        compare(again.output.trim(), first.output.trim(), "the same id")
        tryVerify(function() { return Math.abs(fill.width / bar.width - 0.7) < 0.01 }, 10000, "70 % in the same bar")
        compare(popups.shown.filter(function(n) { return n.summary === "Volume" }).length, 1)
        // A card without the hint has no bar.
        verify(!find(card("Battery low"), function(i) { return i.objectName === "progress" }))
    }
}
