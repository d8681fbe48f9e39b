"""The Django admin's login page behind the same throttle as the API login (hangar.accounts.login_throttle):
a password guessed at /admin/login/ counts against the same account and address budgets."""

from django.contrib import admin
from django.http import HttpResponse

from hangar.accounts.login_throttle import login_wait


def throttled_admin_login(request, **kwargs):
    if request.method == "POST":
        wait = login_wait(request, request.POST.get("username", ""))
        if wait:
            response = HttpResponse("Too many login attempts. Try again later.", status=429)
            response["Retry-After"] = str(wait)
            return response
    return admin.site.login(request, **kwargs)
