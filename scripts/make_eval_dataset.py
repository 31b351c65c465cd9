"""Writes ``tests/data/eval_bilingual.json``: the labelled bilingual (FR/EN) set of ``haki eval``.

    .venv/bin/python scripts/make_eval_dataset.py

Customer-support / CRM memory of eight subjects in two projects. For each subject the facts,
episodes and questions below are written by hand; the labels name the facts and episodes a
good packet must contain. Questions are paraphrases rather than keyword echoes, many are asked
in the other language than the memory they target, some need an episode ("when…", "what
happened…"), some need multi-hop (a second fact linked to the first by a shared name), and
each subject has negative questions that nothing in memory answers.

Around the labelled memory, each subject gets a deterministic background of CRM noise (orders,
invoices, payments, logins, deliveries, usage reports and the episodes that go with them), so
a scope holds ~200 facts: more than the vector and full-text arms' 64 and far more than a
900-token budget can hold, as in a real account. Superseded facts (old addresses, old plans)
are distractors the hard filters must drop. Ids are UUID v5 of ``subject/key``: rerunning
the script gives the same file.
"""

import json
import random
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "eval_bilingual.json"
NAMESPACE = uuid.UUID("5b0c6f1e-3f1a-4e9a-9a59-2f3c8e3c2a10")
BACKGROUND_FACTS = 170
BACKGROUND_EVENTS = 30

Fact = tuple[str, dict[str, Any], str, list[str]]  # predicate, value, valid_from, source events
Event = tuple[str, str, str]  # kind, occurred_at, text
Query = tuple[str, list[str]]  # question, expected keys (facts or events); [] = negative


@dataclass
class Subject:
    project: str
    subject: str
    lang: str
    facts: dict[str, Fact]
    events: dict[str, Event]
    queries: list[Query]
    superseded: dict[str, Fact] = field(default_factory=dict)


SUBJECTS: list[Subject] = [
    Subject(
        "acme-telecom", "cust-camille-martin", "fr",
        facts={
            "lang": ("preferred_language",
                     {"langue": "français", "note": "refuse toute correspondance en anglais"},
                     "2024-03-02", ["ev_lang"]),
            "channel": ("contact_channel",
                        {"canal": "SMS", "note": "ne répond jamais au téléphone en journée"},
                        "2024-05-14", []),
            "address": ("delivery_address",
                        {"rue": "12 rue Victor Hugo", "ville": "Lyon", "code": "69002",
                         "accès": "digicode 4821B, 3e étage"}, "2025-09-01", ["ev_move"]),
            "plan": ("subscription_plan",
                     {"offre": "Fibre 2 Gb", "prix": "39,99 EUR par mois",
                      "engagement": "12 mois"}, "2025-09-10", ["ev_upgrade"]),
            "router": ("home_network",
                       {"box": "Nimbus router v3", "wifi": "5 GHz", "répéteur": "oui, salon"},
                       "2025-09-12", []),
            "incident": ("open_incident",
                         {"problème": "la box redémarre toutes les nuits vers 3 h",
                          "ticket": "TK-55190"}, "2026-10-20", ["ev_incident"]),
            "payment": ("payment_method",
                        {"moyen": "prélèvement SEPA", "jour": "le 5 du mois",
                         "banque": "Crédit Mutuel"}, "2024-03-02", []),
            "birthday": ("birthday", {"date": "14 juillet"}, "2024-03-02", []),
            "employer": ("employer",
                         {"entreprise": "Hospices Civils de Lyon", "poste": "infirmière de nuit"},
                         "2024-06-01", []),
            "callback": ("callback_window",
                         {"jours": "mardi et jeudi", "heure": "après 18 h 30"},
                         "2025-01-08", []),
            "complaint": ("complaint",
                          {"objet": "technicien absent au rendez-vous du 3 octobre",
                           "geste": "un mois offert"}, "2025-10-04", ["ev_noshow"]),
            "consent": ("marketing_consent",
                        {"newsletter": "non", "offres_partenaires": "non"}, "2024-03-02", []),
            "tv": ("tv_option", {"option": "bouquet Ciné+", "prix": "9,99 EUR par mois"},
                   "2025-11-15", []),
            "neighbour": ("parcel_relay",
                          {"voisine": "Mme Girard", "note": "peut réceptionner les colis"},
                          "2025-09-03", []),
            "girard": ("neighbour_note",
                       {"nom": "Mme Girard", "note": "absente en août, ne pas livrer chez elle"},
                       "2025-09-03", []),
        },
        superseded={
            "old_address": ("delivery_address",
                            {"rue": "4 place Bellecour", "ville": "Lyon", "code": "69002"},
                            "2024-03-02", []),
            "old_plan": ("subscription_plan", {"offre": "Fibre 500 Mb", "prix": "29,99 EUR"},
                         "2024-03-02", []),
        },
        events={
            "ev_lang": ("conversation.message", "2024-03-02T09:14:00Z",
                        "Bonjour, je vous remercie de m'écrire uniquement en français, je ne "
                        "lis pas l'anglais."),
            "ev_move": ("conversation.message", "2025-08-28T18:40:00Z",
                        "Je déménage le 1er septembre au 12 rue Victor Hugo, pouvez-vous "
                        "transférer ma ligne ?"),
            "ev_upgrade": ("order.placed", "2025-09-10T12:00:00Z",
                           "Passage à l'offre Fibre 2 Gb validé en boutique."),
            "ev_incident": ("ticket.opened", "2026-10-20T07:55:00Z",
                            "La box redémarre toutes les nuits, la connexion coupe pendant "
                            "mes gardes de nuit."),
            "ev_noshow": ("call.logged", "2025-10-03T16:20:00Z",
                          "Cliente furieuse : le technicien n'est jamais venu au rendez-vous "
                          "de l'installation."),
            "ev_outage": ("ticket.comment", "2026-02-11T10:05:00Z",
                          "Panne de quartier à Lyon 2e le 10 février, rétablie en 6 heures."),
        },
        queries=[
            ("In which language should we write to this customer?", ["lang"]),
            ("Est-ce qu'on peut lui envoyer un e-mail en anglais ?", ["lang"]),
            ("What's the best way to get hold of her?", ["channel"]),
            ("Where should the replacement router be shipped?", ["address"]),
            ("Quel est le code d'accès de son immeuble ?", ["address"]),
            ("How fast is her internet connection and what does she pay?", ["plan"]),
            ("Quel modèle de box a-t-elle chez elle ?", ["router"]),
            ("Is there an ongoing technical issue on her line?", ["incident"]),
            ("Pourquoi sa connexion coupe la nuit ?", ["incident", "ev_incident"]),
            ("How does she pay her bills?", ["payment"]),
            ("When is her birthday?", ["birthday"]),
            ("What does she do for a living?", ["employer"]),
            ("Quand la rappeler ?", ["callback"]),
            ("Has she had a bad experience with a technician?", ["complaint", "ev_noshow"]),
            ("Peut-on lui proposer nos offres partenaires ?", ["consent"]),
            ("Which TV package does she subscribe to?", ["tv"]),
            ("Who can receive parcels when she is not home?", ["neighbour", "girard"]),
            ("When did she move to her current flat?", ["ev_move"]),
            ("Y a-t-il eu une panne dans son quartier cette année ?", ["ev_outage"]),
            ("Why did she upgrade her plan and when?", ["plan", "ev_upgrade"]),
            ("Does she own a car?", []),
            ("Quelle est sa pointure de chaussures ?", []),
            ("Est-elle joignable par téléphone en journée ?", ["channel"]),
            ("Which bank does the direct debit come from?", ["payment"]),
        ],
    ),
    Subject(
        "acme-telecom", "cust-james-walker", "en",
        facts={
            "lang": ("preferred_language",
                     {"language": "English", "note": "learning French, but keep it English"},
                     "2024-01-20", []),
            "address": ("billing_address",
                        {"street": "27 Station Road", "city": "Manchester",
                         "postcode": "M4 1HN"}, "2024-01-20", []),
            "plan": ("subscription_plan",
                     {"plan": "Mobile Unlimited EU", "price": "25 GBP a month",
                      "roaming": "included in France and Spain"}, "2025-04-02", []),
            "device": ("device_owned",
                       {"device": "Lyra phone 12", "bought": "April 2025",
                        "insurance": "screen cover until April 2027"}, "2025-04-02", []),
            "travel": ("travel_pattern",
                       {"note": "spends every summer in Biarritz",
                        "months": "July and August"}, "2025-06-18", ["ev_roaming"]),
            "balance": ("outstanding_balance",
                        {"amount": "64.20 GBP", "due": "15 December",
                         "reason": "roaming data outside EU"}, "2026-11-02", ["ev_bill"]),
            "channel": ("contact_channel",
                        {"channel": "email", "note": "hates phone calls at work"},
                        "2024-01-20", []),
            "wife": ("family_contact",
                     {"name": "Grace Walker", "relation": "wife",
                      "authorised": "may manage the account"}, "2024-02-11", []),
            "grace": ("family_note",
                      {"name": "Grace Walker", "note": "French speaker, prefers calls in French"},
                      "2024-02-11", []),
            "loyalty": ("loyalty_tier", {"tier": "Gold", "points": "4 250"}, "2026-06-01", []),
            "sim": ("sim_swap", {"reason": "lost phone in Biarritz", "new_sim": "eSIM"},
                    "2025-08-09", ["ev_lost"]),
            "nps": ("satisfaction", {"nps": "9", "comment": "great roaming, slow support"},
                    "2026-03-12", []),
            "hobby": ("hobby", {"hobby": "surfing", "club": "Biarritz surf club"},
                      "2025-06-18", []),
            "dnc": ("marketing_consent", {"calls": "do not call", "email_offers": "yes"},
                    "2024-01-20", []),
        },
        superseded={
            "old_plan": ("subscription_plan", {"plan": "Mobile 20 GB", "price": "15 GBP"},
                         "2024-01-20", []),
        },
        events={
            "ev_roaming": ("conversation.message", "2025-06-18T08:00:00Z",
                           "Off to Biarritz for the summer again, will roaming work there?"),
            "ev_bill": ("email.received", "2026-11-02T14:30:00Z",
                        "Why is my bill 64 pounds higher? I only used data on a ferry."),
            "ev_lost": ("call.logged", "2025-08-09T11:10:00Z",
                        "Customer lost his phone on the beach, SIM blocked and eSIM issued."),
            "ev_upgrade": ("order.placed", "2025-04-02T10:00:00Z",
                           "New Lyra phone 12 bought with the Unlimited EU plan."),
            "ev_survey": ("survey.answered", "2026-03-12T19:00:00Z",
                          "Survey: 9/10, support took too long to answer the chat."),
        },
        queries=[
            ("Quelle langue utiliser avec ce client ?", ["lang"]),
            ("Where do we send his invoices?", ["address"]),
            ("Son forfait couvre-t-il l'Espagne ?", ["plan"]),
            ("Which phone does he have and is it insured?", ["device"]),
            ("Where does he go on holiday?", ["travel"]),
            ("Pourquoi sa dernière facture est-elle plus élevée ?", ["balance", "ev_bill"]),
            ("Does he owe us anything?", ["balance"]),
            ("Can we call him at the office?", ["channel"]),
            ("Qui d'autre peut gérer le compte ?", ["wife", "grace"]),
            ("In which language should we speak to his wife?", ["grace"]),
            ("What is his loyalty status?", ["loyalty"]),
            ("Why does he have an eSIM now?", ["sim"]),
            ("Quand a-t-il perdu son téléphone ?", ["ev_lost"]),
            ("How happy is he with our service?", ["nps"]),
            ("Que pense-t-il du support client ?", ["nps", "ev_survey"]),
            ("What sport does he practise?", ["hobby"]),
            ("Peut-on lui faire du démarchage téléphonique ?", ["dnc"]),
            ("When did he buy his current phone?", ["ev_upgrade"]),
            ("How much is his monthly plan?", ["plan"]),
            ("What happened with the ferry data charges?", ["ev_bill"]),
            ("Has he ever complained about a technician visit?", []),
            ("Quel est son numéro de passeport ?", []),
            ("Is his wife allowed to make changes on the account?", ["wife"]),
            ("Comment a-t-il réagi à la hausse de sa facture ?", ["ev_bill"]),
        ],
    ),
    Subject(
        "acme-telecom", "cust-ines-benali", "mixed",
        facts={
            "lang": ("preferred_language",
                     {"language": "French or Dutch", "note": "bilingual, answers in either"},
                     "2024-09-01", []),
            "address": ("delivery_address",
                        {"street": "Rue Haute 112", "city": "Brussels", "postcode": "1000"},
                        "2026-05-20", ["ev_move"]),
            "business": ("employer",
                         {"company": "Atelier Morel", "role": "architecte",
                          "note": "works from home on Fridays"}, "2024-09-01", []),
            "plan": ("subscription_plan",
                     {"plan": "Business Fibre 1 Gb", "static_ip": "yes",
                      "price": "59 EUR HT"}, "2025-02-14", []),
            "vat": ("billing_details",
                    {"vat_number": "BE0712345678", "invoices": "to the company, not personal"},
                    "2025-02-14", []),
            "accessibility": ("accessibility_need",
                              {"need": "daughter is hard of hearing, prefers written contact"},
                              "2025-03-03", []),
            "incident": ("incident_history",
                         {"issue": "outage during a client presentation",
                          "compensation": "50 EUR credit"}, "2025-11-07", ["ev_outage"]),
            "backup": ("backup_line", {"line": "4G backup box", "status": "active"},
                       "2025-11-20", []),
            "pets": ("household", {"note": "two cats, technicians should keep the door shut"},
                     "2025-03-03", []),
            "preferred_tech": ("technician_preference",
                               {"name": "Karim Okafor", "note": "she asks for him by name"},
                               "2025-11-20", []),
            "okafor": ("staff_note",
                       {"name": "Karim Okafor", "note": "moved to the Liège team in 2026"},
                       "2026-01-10", []),
            "renewal": ("contract_renewal",
                        {"renews_on": "14 February 2027", "notice": "one month"},
                        "2025-02-14", []),
        },
        superseded={
            "old_address": ("delivery_address",
                            {"street": "Chaussée de Wavre 45", "city": "Ixelles"},
                            "2024-09-01", []),
        },
        events={
            "ev_move": ("conversation.message", "2026-05-18T12:00:00Z",
                        "On déménage Rue Haute le 20 mai, la ligne pro doit suivre."),
            "ev_outage": ("ticket.opened", "2025-11-07T09:30:00Z",
                          "Connection dropped in the middle of a video call with a client, "
                          "lost the contract pitch."),
            "ev_backup": ("order.placed", "2025-11-20T15:00:00Z",
                          "Installed 4G backup box so the office stays online during outages."),
            "ev_tech": ("call.logged", "2025-11-20T16:45:00Z",
                        "Karim Okafor installed the backup and checked the wiring."),
            "ev_invoice": ("email.received", "2025-02-20T08:00:00Z",
                           "Please put the VAT number on every invoice, my accountant needs it."),
        },
        queries=[
            ("Dans quelle langue lui répondre ?", ["lang"]),
            ("Where is her new office?", ["address"]),
            ("Quand a-t-elle déménagé ?", ["ev_move"]),
            ("What is her job?", ["business"]),
            ("Does she have a fixed IP address?", ["plan"]),
            ("Quel numéro de TVA mettre sur les factures ?", ["vat"]),
            ("Why does she insist on the VAT number?", ["vat", "ev_invoice"]),
            ("Faut-il éviter de l'appeler ?", ["accessibility"]),
            ("What went wrong during her client presentation?", ["incident", "ev_outage"]),
            ("Quelle compensation a-t-elle reçue ?", ["incident"]),
            ("How does she stay online if the fibre fails?", ["backup"]),
            ("Quand la box 4G a-t-elle été installée ?", ["ev_backup"]),
            ("Anything technicians should know before visiting?", ["pets"]),
            ("Which technician does she want, and is he still available?",
             ["preferred_tech", "okafor"]),
            ("Who installed her backup box?", ["ev_tech"]),
            ("When can she leave her contract?", ["renewal"]),
            ("Combien paie-t-elle pour sa fibre ?", ["plan"]),
            ("Is she a personal or a business customer?", ["vat", "business"]),
            ("Quelle est sa couleur préférée ?", []),
            ("Has she ordered a TV package?", []),
            ("Quel débit a son abonnement professionnel ?", ["plan"]),
            ("Does she have pets?", ["pets"]),
        ],
    ),
    Subject(
        "acme-telecom", "acct-boulangerie-lemoine", "fr",
        facts={
            "manager": ("account_manager",
                        {"nom": "Mathilde Roussel", "agence": "Bordeaux"}, "2024-04-01", []),
            "roussel": ("staff_note",
                        {"nom": "Mathilde Roussel",
                         "note": "en congé maternité jusqu'en avril 2027, remplacée par Hugo "
                                 "Perrin"}, "2026-10-01", []),
            "sites": ("business_sites",
                      {"sites": "3 boutiques : Chartrons, Saint-Michel et Mérignac"},
                      "2024-04-01", []),
            "pos": ("payment_terminal",
                    {"terminaux": "4 TPE Atlas", "contrat": "location 24 mois"},
                    "2025-01-15", []),
            "hours": ("opening_hours",
                      {"horaires": "6 h - 20 h, fermé le lundi",
                       "interventions": "uniquement le lundi"}, "2024-04-01", []),
            "contact": ("main_contact",
                        {"nom": "Paul Lemoine", "rôle": "gérant", "portable": "06 12 34 56 78"},
                        "2024-04-01", []),
            "paul": ("contact_note",
                     {"nom": "Paul Lemoine", "note": "très matinal, joignable dès 5 h"},
                     "2024-04-01", []),
            "sla": ("service_level",
                    {"garantie": "rétablissement en 4 heures", "pénalité": "10 % de la "
                     "mensualité"}, "2025-01-15", []),
            "outage": ("incident_history",
                       {"incident": "panne TPE un samedi matin", "perte": "environ 2 000 EUR "
                        "de ventes"}, "2026-03-07", ["ev_tpe"]),
            "invoice": ("billing_details",
                        {"facturation": "une facture unique pour les 3 sites",
                         "échéance": "30 jours fin de mois"}, "2024-04-01", []),
            "renewal": ("contract_renewal",
                        {"renouvellement": "1er avril 2027",
                         "négociation": "veut une remise de 15 %"}, "2026-09-15", ["ev_nego"]),
            "wifi": ("customer_wifi", {"wifi_clients": "réseau invité à Mérignac uniquement"},
                     "2025-06-01", []),
        },
        events={
            "ev_tpe": ("ticket.opened", "2026-03-07T07:10:00Z",
                       "Les terminaux de paiement ne marchent plus, file d'attente devant la "
                       "boutique des Chartrons."),
            "ev_nego": ("call.logged", "2026-09-15T14:00:00Z",
                        "Paul Lemoine menace de partir chez un concurrent sans remise au "
                        "renouvellement."),
            "ev_visit": ("meeting.held", "2025-01-15T10:00:00Z",
                         "Rendez-vous à Saint-Michel pour signer la location des terminaux."),
            "ev_wifi": ("ticket.comment", "2025-06-02T09:00:00Z",
                        "Guest Wi-Fi enabled for customers at the Mérignac shop only."),
        },
        queries=[
            ("Who is our account manager for this bakery?", ["manager"]),
            ("Qui contacter côté Acme pendant l'absence de la chargée de compte ?",
             ["manager", "roussel"]),
            ("How many shops does the customer run?", ["sites"]),
            ("Combien de terminaux de paiement ont-ils ?", ["pos"]),
            ("When can a technician come without disturbing the shops?", ["hours"]),
            ("Who runs the business and how do I reach him?", ["contact", "paul"]),
            ("Quelle est notre garantie de rétablissement ?", ["sla"]),
            ("What happened with the card terminals last March?", ["outage", "ev_tpe"]),
            ("Combien la panne leur a-t-elle coûté ?", ["outage"]),
            ("How are they invoiced?", ["invoice"]),
            ("Is the customer at risk of leaving?", ["renewal", "ev_nego"]),
            ("Quand le contrat doit-il être renouvelé ?", ["renewal"]),
            ("Which shop has customer Wi-Fi?", ["wifi"]),
            ("When was the terminal rental signed?", ["ev_visit"]),
            ("Quelle remise demandent-ils ?", ["renewal"]),
            ("Can I call the owner at 5:30 in the morning?", ["paul"]),
            ("Ont-ils une assurance incendie chez nous ?", []),
            ("How many employees does the bakery have?", []),
            ("Where is our account manager based?", ["manager"]),
            ("Le client a-t-il menacé de partir ?", ["ev_nego"]),
        ],
    ),
    Subject(
        "northwind-crm", "cust-oliver-smith", "en",
        facts={
            "diet": ("dietary_requirement",
                     {"diet": "vegan", "allergy": "peanuts (severe)"}, "2025-01-05",
                     ["ev_allergy"]),
            "box": ("subscription_plan",
                    {"plan": "Family meal box", "meals": "4 dinners a week for 3 people"},
                    "2025-01-05", []),
            "slot": ("delivery_slot",
                     {"day": "Thursday", "window": "after 6 pm", "carrier": "DPD"},
                     "2025-03-10", []),
            "address": ("delivery_address",
                        {"street": "9 Mill Lane", "city": "Bristol", "postcode": "BS1 6QT",
                         "note": "leave with the neighbour at number 11"}, "2025-01-05", []),
            "kids": ("household", {"note": "two children, 6 and 9, no spicy food"},
                     "2025-01-05", []),
            "skip": ("paused_weeks", {"weeks": "two weeks in August",
                                      "reason": "family holiday in Portugal"},
                     "2026-07-01", ["ev_pause"]),
            "complaint": ("complaint",
                          {"about": "box arrived warm in July heatwave",
                           "outcome": "full refund of 74 GBP"}, "2025-07-19", ["ev_warm"]),
            "referral": ("referral", {"referred": "Charlotte Evans", "reward": "20 GBP credit"},
                         "2025-10-02", []),
            "evans": ("customer_link",
                      {"name": "Charlotte Evans", "note": "lives next door at number 11"},
                      "2025-10-02", []),
            "payment": ("payment_method", {"method": "PayPal", "note": "card declined twice"},
                        "2025-02-01", []),
            "favourite": ("favourite_recipe",
                          {"recipe": "mushroom stroganoff", "note": "asks for it monthly"},
                          "2025-11-11", []),
            "packaging": ("packaging_preference",
                          {"note": "wants paper insulation, no polystyrene"}, "2025-07-20", []),
        },
        events={
            "ev_allergy": ("conversation.message", "2025-01-05T17:20:00Z",
                           "My son has a severe peanut allergy, please make sure nothing "
                           "contains nuts."),
            "ev_pause": ("conversation.message", "2026-07-01T08:45:00Z",
                         "We're in Portugal the first two weeks of August, pause the boxes "
                         "please."),
            "ev_warm": ("ticket.opened", "2025-07-19T20:00:00Z",
                        "Box was left in the sun all afternoon, the fish was warm."),
            "ev_late": ("ticket.comment", "2026-01-22T21:10:00Z",
                        "DPD driver came at 10 pm, kids were asleep."),
        },
        queries=[
            ("Does he have any food allergies?", ["diet", "ev_allergy"]),
            ("Peut-on lui envoyer un plat au beurre de cacahuète ?", ["diet"]),
            ("How many meals does the family get each week?", ["box"]),
            ("Quel jour est-il livré ?", ["slot"]),
            ("Where should the driver leave the box if nobody answers?", ["address"]),
            ("Pourquoi éviter les plats épicés ?", ["kids"]),
            ("Will he receive boxes in August?", ["skip", "ev_pause"]),
            ("What went wrong last summer with a delivery?", ["complaint", "ev_warm"]),
            ("Combien avons-nous remboursé ?", ["complaint"]),
            ("Who did he refer, and where does that person live?", ["referral", "evans"]),
            ("Comment paie-t-il ?", ["payment"]),
            ("Which recipe does he love?", ["favourite"]),
            ("Quelles sont ses exigences d'emballage ?", ["packaging"]),
            ("Has a driver ever come too late?", ["ev_late"]),
            ("What happened on the late-night delivery in January?", ["ev_late"]),
            ("Is he vegetarian or vegan?", ["diet"]),
            ("Does he have a gym membership?", []),
            ("Quelle voiture conduit-il ?", []),
            ("How old are the children?", ["kids"]),
            ("Quel transporteur livre ses repas ?", ["slot"]),
        ],
    ),
    Subject(
        "northwind-crm", "cust-sophie-durand", "fr",
        facts={
            "size": ("clothing_size", {"taille": "38", "chaussures": "39"}, "2024-11-02", []),
            "returns": ("return_history",
                        {"retours": "7 retours en 2026", "motif": "tailles trop petites"},
                        "2026-10-30", []),
            "vip": ("loyalty_tier", {"niveau": "Platine", "avantage": "retours gratuits"},
                    "2026-01-01", []),
            "address": ("delivery_address",
                        {"point_relais": "Mondial Relay, tabac du boulevard Voltaire",
                         "ville": "Nantes"}, "2025-05-12", []),
            "lost": ("parcel_issue",
                     {"commande": "CMD-88412", "problème": "colis perdu par le transporteur",
                      "solution": "renvoi gratuit"}, "2026-09-14", ["ev_lost"]),
            "style": ("style_preference",
                      {"style": "lin et coton bio", "couleurs": "bleu marine, beige"},
                      "2025-03-02", []),
            "channel": ("contact_channel", {"canal": "WhatsApp", "note": "jamais d'appels"},
                        "2025-05-12", []),
            "gift": ("gift_card", {"montant": "150 EUR", "offerte_par": "sa sœur Élodie"},
                     "2026-12-01", []),
            "elodie": ("family_contact",
                       {"nom": "Élodie Durand", "relation": "sœur",
                        "note": "cliente aussi, compte séparé"}, "2026-12-01", []),
            "wishlist": ("wishlist", {"article": "trench beige en lin",
                                      "alerte": "prévenir si retour en stock taille 38"},
                         "2026-11-05", []),
            "damaged": ("complaint", {"objet": "robe reçue déchirée",
                                      "geste": "bon d'achat de 20 EUR"}, "2026-04-03",
                        ["ev_torn"]),
            "newsletter": ("marketing_consent", {"newsletter": "oui", "sms": "non"},
                           "2024-11-02", []),
        },
        superseded={
            "old_address": ("delivery_address", {"rue": "3 allée des Tilleuls", "ville": "Rezé"},
                            "2024-11-02", []),
        },
        events={
            "ev_lost": ("ticket.opened", "2026-09-14T13:00:00Z",
                        "Mon colis CMD-88412 est indiqué livré mais je ne l'ai jamais reçu."),
            "ev_torn": ("conversation.message", "2026-04-03T19:30:00Z",
                        "La robe est arrivée avec un accroc dans le dos, très déçue."),
            "ev_sale": ("order.placed", "2026-01-10T10:00:00Z",
                        "Commande de soldes : 3 chemises en lin, 1 pantalon beige."),
            "ev_size": ("conversation.message", "2026-10-30T09:00:00Z",
                        "Encore trop petit, vos tailles taillent vraiment petit."),
        },
        queries=[
            ("What size does she wear?", ["size"]),
            ("Why does she return so many items?", ["returns", "ev_size"]),
            ("Does she pay for returns?", ["vip"]),
            ("Where are her parcels delivered?", ["address"]),
            ("What happened to order CMD-88412?", ["lost", "ev_lost"]),
            ("Which fabrics and colours does she like?", ["style"]),
            ("Can I phone her about her order?", ["channel"]),
            ("Who gave her a gift card, and is that person a customer too?", ["gift", "elodie"]),
            ("Quel article attend-elle en stock ?", ["wishlist"]),
            ("Has she received a damaged item?", ["damaged", "ev_torn"]),
            ("Quel geste commercial a-t-elle eu pour la robe ?", ["damaged"]),
            ("Can we text her promotions?", ["newsletter"]),
            ("What did she buy in the January sales?", ["ev_sale"]),
            ("Quel est son niveau de fidélité ?", ["vip"]),
            ("Which delivery company drops off her parcels?", ["address"]),
            ("Quand a-t-elle signalé le colis perdu ?", ["ev_lost"]),
            ("Does she have children?", []),
            ("Quel est son salaire ?", []),
            ("What shoe size does she take?", ["size"]),
            ("Qui est Élodie ?", ["elodie"]),
        ],
    ),
    Subject(
        "northwind-crm", "acct-fabrikam", "en",
        facts={
            "contract": ("contract",
                         {"type": "framework agreement", "value": "180 000 EUR a year",
                          "term": "3 years from March 2025"}, "2025-03-01", []),
            "buyer": ("main_contact",
                      {"name": "Priya Nair", "role": "procurement manager", "office": "Lille"},
                      "2025-03-01", []),
            "nair": ("contact_note",
                     {"name": "Priya Nair", "note": "insists on purchase order numbers on every "
                      "invoice"}, "2025-03-01", []),
            "champion": ("internal_champion",
                         {"name": "Daniel Wright", "role": "CTO", "note": "pushed for our "
                          "platform"}, "2025-03-01", []),
            "wright": ("contact_note",
                       {"name": "Daniel Wright",
                        "note": "leaving Fabrikam in January 2027 for a competitor"},
                       "2026-11-12", ["ev_leaving"]),
            "po": ("billing_details",
                   {"po_required": "yes", "payment_terms": "60 days", "portal": "Coupa"},
                   "2025-03-01", []),
            "volume": ("order_volume",
                       {"average": "1 200 units a month", "peak": "November"}, "2026-06-30", []),
            "sla": ("service_level",
                    {"delivery": "48 hours", "penalty": "2% per late day"}, "2025-03-01", []),
            "dispute": ("billing_dispute",
                        {"invoice": "INV-2026-0917", "amount": "12 400 EUR",
                         "issue": "charged for cancelled pallets"}, "2026-10-05", ["ev_dispute"]),
            "security": ("security_requirement",
                         {"requirement": "ISO 27001 certificate renewed every year"},
                         "2025-03-01", []),
            "sites": ("delivery_sites",
                      {"sites": "Lille warehouse and Rotterdam hub"}, "2025-03-01", []),
            "rebate": ("volume_rebate", {"threshold": "15 000 units a year", "rebate": "3%"},
                       "2025-03-01", []),
        },
        events={
            "ev_leaving": ("meeting.held", "2026-11-12T15:00:00Z",
                           "Daniel Wright told us off the record he is joining a competitor."),
            "ev_dispute": ("email.received", "2026-10-05T09:12:00Z",
                           "Invoice INV-2026-0917 includes 40 pallets we cancelled in "
                           "September."),
            "ev_qbr": ("meeting.held", "2026-06-30T10:00:00Z",
                       "Quarterly review: volumes up 12%, they want Rotterdam deliveries "
                       "twice a week."),
            "ev_audit": ("email.received", "2026-02-15T08:30:00Z",
                         "Security team asks for our renewed ISO certificate before March."),
        },
        queries=[
            ("Quelle est la valeur annuelle du contrat ?", ["contract"]),
            ("Who handles purchasing at Fabrikam?", ["buyer"]),
            ("What must appear on invoices for their buyer?", ["buyer", "nair"]),
            ("Qui nous soutient en interne chez le client, et est-ce toujours le cas ?",
             ["champion", "wright"]),
            ("Is there a risk to the relationship next year?", ["wright", "ev_leaving"]),
            ("Which procurement portal do they use?", ["po"]),
            ("Quels sont les délais de paiement ?", ["po"]),
            ("How many units do they order monthly?", ["volume"]),
            ("What are the late delivery penalties?", ["sla"]),
            ("Pourquoi contestent-ils une facture ?", ["dispute", "ev_dispute"]),
            ("Which certificate do they require from us?", ["security"]),
            ("Quand ont-ils demandé le certificat ?", ["ev_audit"]),
            ("Where do we deliver for them?", ["sites"]),
            ("Do they get a discount for volume?", ["rebate"]),
            ("What came out of the last quarterly business review?", ["ev_qbr"]),
            ("Combien d'unités en période de pointe et quand ?", ["volume"]),
            ("Quel est le montant de la facture contestée ?", ["dispute"]),
            ("Do they use our mobile app?", []),
            ("Who is their auditor?", []),
            ("How long is the framework agreement?", ["contract"]),
            ("Qui est Priya Nair ?", ["buyer"]),
        ],
    ),
    Subject(
        "northwind-crm", "cust-karim-haddad", "mixed",
        facts={
            "access": ("accessibility_need",
                       {"need": "wheelchair user, deliveries must be brought inside"},
                       "2025-02-10", []),
            "screen": ("accessibility_need",
                       {"need": "uses a screen reader, send plain-text emails"},
                       "2025-02-10", []),
            "lang": ("preferred_language", {"langue": "arabe ou français", "note": "pas "
                                            "d'anglais"}, "2025-02-10", []),
            "son": ("family_contact",
                    {"nom": "Mehdi Haddad", "relation": "fils",
                     "note": "autorisé à passer commande pour lui"}, "2025-02-10", []),
            "mehdi": ("contact_note",
                      {"nom": "Mehdi Haddad", "note": "étudiant à Montpellier, joignable le "
                       "soir"}, "2025-09-01", []),
            "address": ("delivery_address",
                        {"rue": "18 avenue Jean Jaurès", "ville": "Toulouse",
                         "note": "rez-de-chaussée, rampe côté parking"}, "2025-02-10", []),
            "meds": ("order_pattern",
                     {"produits": "compléments vitamine D et tensiomètre",
                      "fréquence": "tous les deux mois"}, "2025-06-01", []),
            "device": ("device_owned",
                       {"appareil": "Delta smartwatch", "usage": "alertes de chute"},
                       "2026-03-15", ["ev_watch"]),
            "payment": ("payment_method",
                        {"moyen": "carte Visa", "note": "refuse le paiement en plusieurs fois"},
                        "2025-02-10", []),
            "incident": ("complaint",
                         {"objet": "livreur a laissé le colis en haut des marches",
                          "suite": "avertissement transporteur"}, "2026-05-22", ["ev_stairs"]),
            "ramadan": ("delivery_slot",
                        {"note": "pendant le ramadan, livrer après 20 h"}, "2026-02-20", []),
        },
        events={
            "ev_watch": ("order.placed", "2026-03-15T11:00:00Z",
                         "Achat d'une montre Delta avec détection de chute, payée par carte."),
            "ev_stairs": ("ticket.opened", "2026-05-22T16:40:00Z",
                          "Le livreur a laissé le colis en haut des escaliers, impossible pour "
                          "moi d'y accéder."),
            "ev_son": ("call.logged", "2025-09-01T19:15:00Z",
                       "Son Mehdi called to order a blood pressure monitor for his father."),
            "ev_fall": ("conversation.message", "2026-08-03T07:00:00Z",
                        "La montre a appelé les secours après une chute, tout va bien."),
        },
        queries=[
            ("How should the courier handle his deliveries?", ["access"]),
            ("What format should our emails to him be in?", ["screen"]),
            ("Which language does he prefer?", ["lang"]),
            ("Who is allowed to order on his behalf and when can we reach them?",
             ["son", "mehdi"]),
            ("Où habite-t-il et comment accéder au logement ?", ["address"]),
            ("What does he usually buy from us?", ["meds"]),
            ("Which smartwatch did he buy and why?", ["device", "ev_watch"]),
            ("Can we offer him a payment plan?", ["payment"]),
            ("What went wrong with a delivery in May?", ["incident", "ev_stairs"]),
            ("Y a-t-il des consignes de livraison pendant le ramadan ?", ["ramadan"]),
            ("Has the watch ever been used in an emergency?", ["ev_fall"]),
            ("Quand son fils a-t-il commandé le tensiomètre ?", ["ev_son"]),
            ("Is there a ramp at his building?", ["address"]),
            ("Faut-il lui envoyer des PDF ?", ["screen"]),
            ("Le client a-t-il un animal de compagnie ?", []),
            ("What is his favourite football team?", []),
            ("Se déplace-t-il en fauteuil roulant ?", ["access"]),
            ("Who is Mehdi?", ["son", "mehdi"]),
        ],
    ),
]

# ----------------------------------------------------------------------------- background

_PRODUCTS = ("Vega tablet", "Orion laptop", "Sirius headset", "Atlas printer cartridges",
             "Nova camera", "Kappa coffee capsules", "Zephyr scooter charger", "USB-C cable",
             "linen shirt", "cotton trousers", "meal box", "SIM card", "phone case")
_CARRIERS = ("DHL", "DPD", "Colissimo", "UPS", "Chronopost", "Royal Mail")
_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December")
_MONTHS_FR = ("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août",
              "septembre", "octobre", "novembre", "décembre")


def _background(subject: Subject, rnd: random.Random) -> tuple[list[dict], list[dict]]:
    """CRM noise of one subject: routine records nobody asks about, in its languages."""
    facts: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for i in range(BACKGROUND_FACTS):
        fr = subject.lang == "fr" or (subject.lang == "mixed" and rnd.random() < 0.5)
        year, month = rnd.choice((2024, 2025, 2026)), rnd.randrange(12)
        date = f"{year}-{month + 1:02d}-{rnd.randrange(1, 28):02d}"
        mon = (_MONTHS_FR if fr else _MONTHS_EN)[month]
        amount = f"{rnd.randrange(9, 400)}.{rnd.randrange(100):02d} EUR"
        order = f"CMD-{rnd.randrange(10000, 99999)}"
        kind = i % 6
        value: dict[str, object]
        if kind == 0:
            predicate, value = "invoice_issued", (
                {"facture": f"F-{year}-{i:04d}", "montant": amount, "période": f"{mon} {year}"}
                if fr else
                {"invoice": f"INV-{year}-{i:04d}", "amount": amount, "period": f"{mon} {year}"})
        elif kind == 1:
            predicate, value = "payment_received", (
                {"montant": amount, "date": date, "référence": f"PAY-{i:05d}"} if fr else
                {"amount": amount, "date": date, "reference": f"PAY-{i:05d}"})
        elif kind == 2:
            predicate, value = "order_placed", (
                {"commande": order, "article": rnd.choice(_PRODUCTS),
                 "quantité": rnd.randrange(1, 4), "date": date} if fr else
                {"order": order, "item": rnd.choice(_PRODUCTS),
                 "quantity": rnd.randrange(1, 4), "date": date})
        elif kind == 3:
            predicate, value = "parcel_delivered", (
                {"commande": order, "transporteur": rnd.choice(_CARRIERS), "date": date}
                if fr else {"order": order, "carrier": rnd.choice(_CARRIERS), "date": date})
        elif kind == 4:
            predicate, value = "portal_login", {
                "device": rnd.choice(("web", "Android app", "iPhone app")), "date": date}
        else:
            predicate, value = "usage_report", (
                {"mois": f"{mon} {year}", "volume": f"{rnd.randrange(5, 400)} Go"} if fr else
                {"month": f"{mon} {year}", "volume": f"{rnd.randrange(5, 400)} GB"})
        facts.append({
            "id": str(_id(subject, f"bg-fact-{i}")), "project_id": subject.project,
            "subject_id": subject.subject, "predicate": predicate, "value": value,
            "valid_from": f"{date}T12:00:00Z", "confidence": 1.0})
    for i in range(BACKGROUND_EVENTS):
        fr = subject.lang == "fr" or (subject.lang == "mixed" and rnd.random() < 0.5)
        when = (f"{rnd.choice((2024, 2025, 2026))}-{rnd.randrange(1, 13):02d}-"
                f"{rnd.randrange(1, 28):02d}T{rnd.randrange(7, 22):02d}:00:00Z")
        order, carrier = f"CMD-{rnd.randrange(10000, 99999)}", rnd.choice(_CARRIERS)
        event_kind, text = rnd.choice((
            ("order.shipped", f"Commande {order} expédiée par {carrier}." if fr
             else f"Order {order} shipped with {carrier}."),
            ("email.sent", "Facture mensuelle envoyée par e-mail." if fr
             else "Monthly invoice sent by email."),
            ("account.login", "Connexion à l'espace client depuis l'application." if fr
             else "Signed in to the customer portal from the app."),
            ("password.reset", "Réinitialisation du mot de passe demandée." if fr
             else "Password reset requested."),
        ))
        events.append({
            "id": str(_id(subject, f"bg-event-{i}")), "project_id": subject.project,
            "subject_id": subject.subject, "kind": event_kind, "payload": {"text": text},
            "occurred_at": when})
    return facts, events


def _id(subject: Subject, key: str) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"{subject.project}/{subject.subject}/{key}")


def build() -> dict[str, Any]:
    rnd = random.Random(20_261_130)
    facts: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for s in SUBJECTS:
        scope = {"project_id": s.project, "subject_id": s.subject}
        for key, (kind, occurred_at, text) in s.events.items():
            events.append({"id": str(_id(s, key)), **scope, "kind": kind,
                           "payload": {"text": text}, "occurred_at": occurred_at})
        for status, group in (("active", s.facts), ("superseded", s.superseded)):
            for key, (predicate, value, valid_from, sources) in group.items():
                facts.append({
                    "id": str(_id(s, key)), **scope, "predicate": predicate, "value": value,
                    "status": status, "confidence": 0.9,
                    "valid_from": f"{valid_from}T09:00:00Z",
                    "source_event_ids": [str(_id(s, e)) for e in sources]})
        noise_facts, noise_events = _background(s, rnd)
        facts.extend(noise_facts)
        events.extend(noise_events)
        for question, expected in s.queries:
            unknown = [k for k in expected if k not in s.facts and k not in s.events]
            if unknown:
                raise ValueError(f"{s.subject}: unknown label(s) {unknown} in {question!r}")
            queries.append({
                **scope, "query": question, "purpose": "support agent answer",
                "expected_fact_ids": [str(_id(s, k)) for k in expected if k in s.facts],
                "expected_event_ids": [str(_id(s, k)) for k in expected if k in s.events]})
    return {"facts": facts, "events": events, "queries": queries}


def main() -> None:
    document = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    negatives = sum(1 for q in document["queries"]
                    if not q["expected_fact_ids"] and not q["expected_event_ids"])
    print(f"wrote {OUT}: {len(document['facts'])} facts, {len(document['events'])} events, "
          f"{len(document['queries'])} queries ({negatives} negative)")


if __name__ == "__main__":
    main()
