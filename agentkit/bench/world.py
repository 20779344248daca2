"""The stand-in services behind agentkit's own suite: a small company's data, and tools that change it.

    world = World.fresh()                               # agentkit/data/scenarios/world.json, a private copy
    tools = world.tools(["find_customer", "create_ticket"])
    run = agentkit.run(model, "Open a ticket for Hooli ...", tools=tools)
    world.state["tickets"]                              # what the tools did: the scenario judges this

Each service is a method with type hints; its JSON Schema is built once per process with `@tool`, and
every case binds the same schema to its own World (`Tool.from_schema`), so a case costs no schema
generation. The methods take and return plain JSON: the gates (parse, JSON Schema) have checked the
arguments before a method runs, and what a method refuses it refuses with a `ServiceError` whose
words the model reads in the error envelope.

A case can script trouble around any tool (`faults`: the Nth call — or every call whose arguments
include `when` — fails with given words; `notices`: such a result carries a note). `stop=true`
adds STOP_PHRASE, the sentence the judge looks for when it checks that the model stopped calling.

Left out on purpose: realism beyond what the scenarios need. Each service does one obvious thing.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from importlib.resources import files
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from ..core.tools import Tool, tool

STOP_PHRASE = "Do not call any more tools."
# Package data (it ships in the wheel), read through importlib.resources.
DATA_DIR = files("agentkit") / "data" / "scenarios"

Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$", description="ISO 4217 code, e.g. USD, JPY")]
Airport = Annotated[str, Field(pattern=r"^[A-Z]{3}$", description="IATA airport code, e.g. HND")]
Day = Annotated[str, Field(json_schema_extra={"format": "date"}, pattern=r"^\d{4}-\d{2}-\d{2}$",
                           description="YYYY-MM-DD")]
InvoiceId = Annotated[str, Field(pattern=r"^INV-\d{4}$", description="e.g. INV-1042")]
Sku = Annotated[str, Field(pattern=r"^SKU-\d{3}$", description="e.g. SKU-101")]
ClockTime = Annotated[str, Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="24-hour HH:MM")]
Unit = Literal["celsius", "fahrenheit"]


class Address(BaseModel):
    street: str
    city: str
    postal_code: str
    country: Annotated[str, Field(pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2 code, e.g. US, JP")]


class OrderItem(BaseModel):
    sku: Sku
    quantity: Annotated[int, Field(ge=1)]


class ServiceError(RuntimeError):
    """A service refused: the model sees "ServiceError: <these words>" in the error envelope."""


class World:
    """One case's copy of the company: `state` is everything the tools can read and change."""

    def __init__(self, state: dict, faults: list[dict] = (), notices: list[dict] = ()):
        self.state = state
        self.faults, self.notices = list(faults), list(notices)
        self.calls: dict[str, int] = {}  # per tool, as the services saw them (refused calls never arrive)

    @classmethod
    def fresh(cls, changes: dict | None = None, faults: list[dict] = (), notices: list[dict] = ()) -> World:
        state = copy.deepcopy(_base_state())
        _merge(state, copy.deepcopy(changes or {}))
        return cls(state, faults, notices)

    # -- tools ------------------------------------------------------------------------------------------

    def tools(self, names: list[str]) -> list[Tool]:
        protos = service_tools()
        unknown = [n for n in names if n not in protos]
        if unknown:
            raise ValueError(f"no service named {', '.join(unknown)}; known: {', '.join(sorted(protos))}")
        return [Tool.from_schema(n, protos[n].description, protos[n].parameters, self._bound(n)) for n in names]

    def _bound(self, name: str):
        method = getattr(self, name)

        def call(**arguments: Any) -> Any:
            count = self.calls[name] = self.calls.get(name, 0) + 1
            for fault in self.faults:
                if _applies(fault, name, count, arguments) and (fault.get("always") or "when" in fault
                                                                or count in fault.get("calls", [1])):
                    raise ServiceError(fault["error"] + (" " + STOP_PHRASE if fault.get("stop") else ""))
            result = method(**arguments)
            for notice in self.notices:
                if _applies(notice, name, count, arguments) and ("when" in notice or count == notice.get("call", 1)):
                    text = notice["text"] + (" " + STOP_PHRASE if notice.get("stop") else "")
                    result = {**result, "notice": text} if isinstance(result, dict) else {"result": result,
                                                                                          "notice": text}
            return result

        call.__name__ = name
        return call

    # -- lookups shared by the services -------------------------------------------------------------------

    def _customer(self, customer_id: str) -> dict:
        if customer_id not in self.state["customers"]:
            raise ServiceError(f"no customer with id {customer_id!r}")
        return self.state["customers"][customer_id]

    def _invoice(self, invoice_id: str) -> dict:
        if invoice_id not in self.state["invoices"]:
            raise ServiceError(f"no invoice {invoice_id}")
        return self.state["invoices"][invoice_id]

    def _new_id(self, table: str, prefix: str, first: int) -> str:
        taken = {int(k.rsplit("-", 1)[1]) for k in self.state[table] if k.startswith(prefix)}
        return f"{prefix}{max(taken | {first - 1}) + 1}"

    # -- weather and rates (the seed articles' examples) ----------------------------------------------------

    def get_weather(self, city: str, unit: Unit = "celsius") -> dict:
        """Current weather for a city.

        Args:
            city: the city's name (English or Japanese)
            unit: temperature unit
        """
        for name, w in self.state["weather"].items():
            if city.strip().casefold() in (name.casefold(), w.get("ja", "")):
                japanese = city.strip() == w.get("ja")
                temp = w["temp_c"] if unit == "celsius" else round(w["temp_c"] * 9 / 5 + 32)
                return {"city": w["ja"] if japanese else name,
                        "condition": w["condition_ja"] if japanese else w["condition"],
                        "temperature": temp, "unit": unit}
        close = [n for n in self.state["weather"] if n[:3].casefold() == city.strip()[:3].casefold()]
        hint = f" Did you mean {close[0]}?" if close else ""
        raise ServiceError(f"unknown city {city!r}.{hint}")

    def get_weather_many(self, cities: list[str], unit: Unit = "celsius") -> dict:
        """Current weather for several cities in one call.

        Args:
            cities: city names
            unit: temperature unit
        """
        return {"reports": [self.get_weather(c, unit) for c in cities]}

    def get_exchange_rate(self, base: Currency, quote: Currency) -> dict:
        """How many units of `quote` one unit of `base` buys.

        Args:
            base: the currency converted from
            quote: the currency converted to
        """
        rate = self.state["rates"].get(f"{base}/{quote}")
        if rate is None:
            raise ServiceError(f"no rate for {base}/{quote}")
        return {"base": base, "quote": quote, "rate": rate}

    def get_ecb_reference_rate(self, base: Currency, quote: Currency) -> dict:
        """The same exchange rates from the ECB reference feed (a backup of get_exchange_rate).

        Args:
            base: the currency converted from
            quote: the currency converted to
        """
        return {**self.get_exchange_rate(base, quote), "source": "ECB"}

    # -- customers and people ---------------------------------------------------------------------------

    def find_customer(self, name: str) -> dict:
        """Look a customer up by its exact registered name.

        Args:
            name: the customer's registered name
        """
        for cid, c in self.state["customers"].items():
            if c["name"] == name.strip():
                return {"customer_id": cid, **c}
        close = [(cid, c["name"]) for cid, c in self.state["customers"].items()
                 if c["name"].casefold().split()[0] == name.strip().casefold().split()[0]] if name.strip() else []
        hint = f" Did you mean {close[0][1]!r} ({close[0][0]})?" if close else ""
        raise ServiceError(f"no customer named {name!r}.{hint}")

    def find_customer_by_email(self, email: str) -> dict:
        """Look a customer up by e-mail address.

        Args:
            email: the address
        """
        for cid, c in self.state["customers"].items():
            if c["email"] == email.strip().lower():
                return {"customer_id": cid, **c}
        raise ServiceError("no customer has this e-mail address")

    def get_employee(self, employee_id: str) -> dict:
        """An employee's name and phone number.

        Args:
            employee_id: e.g. emp_11
        """
        if employee_id not in self.state["employees"]:
            raise ServiceError(f"no employee {employee_id!r}")
        return {"employee_id": employee_id, **self.state["employees"][employee_id]}

    def update_customer_address(self, customer_id: str, address: Address) -> dict:
        """Replace a customer's postal address.

        Args:
            customer_id: e.g. cus_0001
            address: the new address
        """
        self._customer(customer_id)["address"] = dict(address)
        return {"customer_id": customer_id, "address": address}

    def delete_customer(self, customer_id: str) -> dict:
        """Delete a customer and everything about it.

        Args:
            customer_id: e.g. cus_0001
        """
        self._customer(customer_id)
        raise ServiceError("PermissionDenied: only an administrator can delete customers; ask an admin")

    # -- invoices (seed 003's searchInvoices) -------------------------------------------------------------

    def search_invoices(self, start_date: Day, end_date: Day, status: Literal["draft", "sent", "paid", "void"]) -> dict:
        """Invoices issued between two dates (inclusive) with a given status.

        Args:
            start_date: first issue date
            end_date: last issue date
            status: draft, sent (waiting for payment), paid or void
        """
        if end_date < start_date:
            raise ServiceError(f"end_date {end_date} is before start_date {start_date}")
        items = [{"invoice_id": i, "total": v["total"], "currency": v["currency"], "issued_on": v["issued_on"]}
                 for i, v in sorted(self.state["invoices"].items())
                 if v["status"] == status and start_date <= v["issued_on"] <= end_date]
        return {"count": len(items), "items": items}

    def list_invoices(self, customer_id: str, status: Literal["draft", "sent", "paid", "void"] | None = None) -> dict:
        """A customer's invoices, newest first, optionally only one status.

        Args:
            customer_id: e.g. cus_0001
            status: draft, sent (waiting for payment), paid or void
        """
        self._customer(customer_id)
        items = [{"invoice_id": i, **v} for i, v in self.state["invoices"].items()
                 if v["customer_id"] == customer_id and (status is None or v["status"] == status)]
        items.sort(key=lambda v: v["issued_on"], reverse=True)
        return {"count": len(items), "items": items}

    def get_invoice(self, invoice_id: InvoiceId) -> dict:
        """One invoice.

        Args:
            invoice_id: e.g. INV-1042
        """
        return {"invoice_id": invoice_id, **self._invoice(invoice_id)}

    def mark_invoice_paid(self, invoice_id: InvoiceId, paid_on: Day) -> dict:
        """Record that an invoice was paid.

        Args:
            invoice_id: e.g. INV-1042
            paid_on: the payment date
        """
        invoice = self._invoice(invoice_id)
        if invoice["status"] in ("void", "paid"):
            raise ServiceError(f"{invoice_id} is {invoice['status']}; only a sent or draft invoice can be paid")
        invoice.update(status="paid", paid_on=paid_on)
        return {"invoice_id": invoice_id, "status": "paid", "paid_on": paid_on}

    def void_invoice(self, invoice_id: InvoiceId, reason: str) -> dict:
        """Cancel an invoice that has not been paid.

        Args:
            invoice_id: e.g. INV-1042
            reason: why, for the audit log
        """
        invoice = self._invoice(invoice_id)
        if invoice["status"] == "paid":
            raise ServiceError(f"{invoice_id} is paid; a paid invoice cannot be voided")
        invoice.update(status="void", void_reason=reason)
        return {"invoice_id": invoice_id, "status": "void"}

    # -- products, stock, orders ----------------------------------------------------------------------------

    def find_product(self, name: str) -> dict:
        """A product's SKU, price and stock, by name.

        Args:
            name: e.g. Blue Widget
        """
        for sku, p in self.state["products"].items():
            if p["name"].casefold() == name.strip().casefold():
                return {"sku": sku, **p}
        raise ServiceError(f"no product named {name!r}")

    def check_stock(self, sku: Sku) -> dict:
        """How many units of a product are in stock.

        Args:
            sku: the product's SKU
        """
        if sku not in self.state["products"]:
            raise ServiceError(f"no product {sku}")
        p = self.state["products"][sku]
        return {"sku": sku, "name": p["name"], "in_stock": p["in_stock"]}

    def check_warehouse(self, warehouse: Literal["north", "south", "east", "west"], sku: Sku) -> dict:
        """Units of a product in one warehouse.

        Args:
            warehouse: which warehouse
            sku: the product's SKU
        """
        return {"warehouse": warehouse, "sku": sku, "units": self.state["warehouses"][warehouse].get(sku, 0)}

    def create_order(self, customer_id: str, items: list[OrderItem], ship_to: Address,
                     shipping: Literal["standard", "express"] = "standard") -> dict:
        """Place an order for a customer.

        Args:
            customer_id: e.g. cus_0001
            items: what to ship, one entry per product
            ship_to: the delivery address
            shipping: standard (cheapest) or express
        """
        self._customer(customer_id)
        for item in items:
            product = self.state["products"].get(item["sku"])
            if product is None:
                raise ServiceError(f"no product {item['sku']}")
            if product["in_stock"] < item["quantity"]:
                raise ServiceError(f"only {product['in_stock']} {product['name']}s in stock; "
                                   f"{item['quantity']} were asked for")
        for item in items:
            self.state["products"][item["sku"]]["in_stock"] -= item["quantity"]
        order_id = self._new_id("orders", "ORD-", 5001)
        self.state["orders"][order_id] = {"customer_id": customer_id, "status": "processing", "shipping": shipping,
                                          "items": [dict(i) for i in items], "ship_to": dict(ship_to)}
        return {"order_id": order_id, "status": "processing"}

    def get_order(self, order_id: str) -> dict:
        """An order's status, delivery address and expected arrival.

        Args:
            order_id: e.g. ORD-5001
        """
        if order_id not in self.state["orders"]:
            raise ServiceError(f"no order {order_id}")
        return {"order_id": order_id, **self.state["orders"][order_id]}

    def cancel_order(self, order_id: str) -> dict:
        """Cancel an order that has not shipped.

        Args:
            order_id: e.g. ORD-5002
        """
        order = self.get_order(order_id)
        if order["status"] == "shipped":
            raise ServiceError(f"{order_id} has shipped and cannot be cancelled")
        self.state["orders"][order_id]["status"] = "cancelled"
        return {"order_id": order_id, "status": "cancelled"}

    def create_purchase_order(self, sku: Sku, quantity: Annotated[int, Field(ge=1)]) -> dict:
        """Order more units of a product from the supplier.

        Args:
            sku: the product's SKU
            quantity: how many units
        """
        if sku not in self.state["products"]:
            raise ServiceError(f"no product {sku}")
        po_id = self._new_id("purchase_orders", "PO-", 901)
        self.state["purchase_orders"][po_id] = {"sku": sku, "quantity": quantity}
        return {"purchase_order_id": po_id, "sku": sku, "quantity": quantity}

    # -- meetings -------------------------------------------------------------------------------------------

    def list_meetings(self, date: Day) -> dict:
        """The meetings on one day.

        Args:
            date: the day
        """
        items = [{"meeting_id": m, **v} for m, v in sorted(self.state["meetings"].items()) if v["date"] == date]
        return {"date": date, "meetings": items}

    def book_meeting(self, title: str, date: Day, start: ClockTime, duration_minutes: Literal[15, 30, 45, 60],
                     attendees: list[str] = []) -> dict:  # noqa: B006 - never mutated, and a schema default
        """Book a meeting room.

        Args:
            title: what the meeting is about
            date: the day
            start: start time
            duration_minutes: 15, 30, 45 or 60
            attendees: e-mail addresses to invite
        """
        begin, end = _minutes(start), _minutes(start) + duration_minutes
        for other in self.state["meetings"].values():
            o_begin = _minutes(other["start"])
            if other["date"] == date and begin < o_begin + other["duration_minutes"] and o_begin < end:
                free = _clock(o_begin + other["duration_minutes"])
                raise ServiceError(f"the room is taken {other['start']}-{free} on {date}; it is free again "
                                   f"from {free}")
        meeting_id = self._new_id("meetings", "MTG-", 201)
        self.state["meetings"][meeting_id] = {"title": title, "date": date, "start": start,
                                              "duration_minutes": duration_minutes, "attendees": list(attendees)}
        return {"meeting_id": meeting_id, "date": date, "start": start}

    def reschedule_meeting(self, meeting_id: str, date: Day, start: ClockTime) -> dict:
        """Move a meeting to another day and time.

        Args:
            meeting_id: e.g. MTG-201
            date: the new day
            start: the new start time
        """
        if meeting_id not in self.state["meetings"]:
            raise ServiceError(f"no meeting {meeting_id}")
        self.state["meetings"][meeting_id].update(date=date, start=start)
        return {"meeting_id": meeting_id, "date": date, "start": start}

    # -- support tickets --------------------------------------------------------------------------------------

    def create_ticket(self, customer_id: str, subject: str,
                      priority: Literal["low", "normal", "high", "urgent"]) -> dict:
        """Open a support ticket.

        Args:
            customer_id: e.g. cus_0001
            subject: one line about the problem
            priority: low, normal, high or urgent
        """
        self._customer(customer_id)
        ticket_id = self._new_id("tickets", "TCK-", 1)
        ticket_id = f"TCK-{int(ticket_id.split('-')[1]):04d}"
        self.state["tickets"][ticket_id] = {"customer_id": customer_id, "subject": subject, "priority": priority,
                                            "status": "open", "comments": []}
        return {"ticket_id": ticket_id, "status": "open"}

    def add_ticket_comment(self, ticket_id: str, text: str) -> dict:
        """Add a comment to an open ticket.

        Args:
            ticket_id: e.g. TCK-0007
            text: the comment
        """
        if ticket_id not in self.state["tickets"]:
            raise ServiceError(f"no ticket {ticket_id}")
        self.state["tickets"][ticket_id]["comments"].append(text)
        return {"ticket_id": ticket_id, "comments": len(self.state["tickets"][ticket_id]["comments"])}

    # -- flights ------------------------------------------------------------------------------------------------

    def search_flights(self, origin: Airport, destination: Airport, date: Day) -> dict:
        """Flights between two airports on one day, with prices in yen and seats left.

        Args:
            origin: departure airport
            destination: arrival airport
            date: the day
        """
        flights = [f for f in self.state["flights"].get(date, [])
                   if f["origin"] == origin and f["destination"] == destination]
        return {"date": date, "flights": flights}

    def book_flight(self, flight_id: str, date: Day, passenger_name: str) -> dict:
        """Book one seat.

        Args:
            flight_id: e.g. NH 21
            date: the day of the flight
            passenger_name: the passenger's full name
        """
        if date < self.state["today"]:
            raise ServiceError(f"{date} is in the past (today is {self.state['today']})")
        flight = next((f for f in self.state["flights"].get(date, []) if f["flight_id"] == flight_id), None)
        if flight is None:
            raise ServiceError(f"no flight {flight_id} on {date}")
        if flight["seats_left"] < 1:
            raise ServiceError(f"{flight_id} ({flight['origin']}-{flight['destination']}, departs "
                               f"{flight['departs']}) on {date} is full")
        flight["seats_left"] -= 1
        booking_id = self._new_id("bookings", "BK-", 301)
        self.state["bookings"][booking_id] = {"flight_id": flight_id, "date": date, "passenger_name": passenger_name}
        return {"booking_id": booking_id, "flight_id": flight_id, "date": date}

    # -- bank account ---------------------------------------------------------------------------------------------

    def list_transactions(self, account_id: str, page: Annotated[int, Field(ge=1)] = 1) -> dict:
        """One page of an account's transactions, oldest first.

        Args:
            account_id: e.g. ACC-77
            page: which page, from 1
        """
        pages = self.state["transactions"].get(account_id)
        if pages is None:
            raise ServiceError(f"no account {account_id}")
        items = pages[page - 1] if page <= len(pages) else []
        return {"account_id": account_id, "page": page, "pages": len(pages), "items": items}


SERVICES = tuple(name for name in vars(World) if not name.startswith("_") and name not in ("fresh", "tools"))


@lru_cache(maxsize=1)
def _base_state() -> dict:
    state = json.loads((DATA_DIR / "world.json").read_text(encoding="utf-8"))
    state.pop("about", None)
    return state


@lru_cache(maxsize=1)
def service_tools() -> dict[str, Tool]:
    """name -> each service's Tool, built once per process from its type hints. Read their names, descriptions
    and schemas; they run against a throwaway World (World.tools binds the same schemas to a case's World)."""
    scratch = World({})
    return {name: tool(getattr(scratch, name)) for name in SERVICES}


def _applies(event: dict, name: str, count: int, arguments: dict) -> bool:
    """A fault or notice is for this tool, and (when it has `when`) for calls with these arguments."""
    if event["tool"] != name:
        return False
    when = event.get("when")
    return when is None or all(arguments.get(k) == v for k, v in when.items())


def _merge(into: dict, changes: dict) -> None:
    """A case's `world` changes: nested dicts merge key by key, anything else replaces."""
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _minutes(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
