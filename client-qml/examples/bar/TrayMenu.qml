import QtQuick
import Qsd

// A tray item's DBusMenu rendered in QML from /tray/items/<key>/menu (kept current by the
// daemon): submenus open in place, checkboxes and radio items show their state, a click is
// sent back to the application.
MenuWindow {
    id: menu
    required property string itemKey
    readonly property var item: itemKey !== "" ? Qsd.tray?.items?.[itemKey] ?? null : null
    property var expanded: ({})   // submenu id -> open
    title: item?.title || item?.tooltipTitle || item?.id || ""

    function event(id: int, name: string) { Qsd.call("tray.menuEvent", { item: itemKey, id: id, event: name }) }
    // A submenu opens in place. Typed parameters let qmllint check the constants in the body.
    function toggle(id: int) {
        var opening = expanded[id] !== true
        var next = Object.assign({}, expanded)
        next[id] = opening
        expanded = next
        if (opening) {
            // The application may fill the submenu now; the tree shows it when it does.
            Qsd.call("tray.menuAboutToShow", { item: itemKey, id: id })
            event(id, QsdTray.menuEvent.opened)
        } else {
            event(id, QsdTray.menuEvent.closed)
        }
    }
    function activate(id: int) {
        event(id, QsdTray.menuEvent.clicked)
        dismissed()
    }

    onOpenChanged: {
        if (itemKey === "") return
        expanded = {}
        if (open) {
            Qsd.call("tray.menuAboutToShow", { item: itemKey, id: 0 })
            event(0, QsdTray.menuEvent.opened)
        } else {
            event(0, QsdTray.menuEvent.closed)
        }
    }

    TrayMenuEntries {
        width: parent.width
        menu: menu
        entries: menu.item?.menu?.children ?? []
        depth: 0
    }
    Label {
        visible: (menu.item?.menu?.children ?? []).length === 0
        leftPadding: 8
        height: 26
        color: Theme.dim
        text: "No menu"
    }
}
