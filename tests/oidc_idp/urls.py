from django.contrib.auth import authenticate, login
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt

FORM = (
    '<form method="post"><input name="username"><input name="password" type="password">'
    '<input type="hidden" name="next" value="{next}"><button>Sign in</button></form>'
)


@csrf_exempt
def sign_in(request):
    """The provider's own sign-in page: username and password, then back to `next` (the authorize URL)."""
    if request.method == "POST":
        user = authenticate(request, username=request.POST["username"], password=request.POST["password"])
        if user is None:
            return HttpResponse("bad credentials", status=401)
        login(request, user)
        return HttpResponseRedirect(request.POST.get("next") or "/")
    return HttpResponse(FORM.format(next=request.GET.get("next", "")))


urlpatterns = [
    path("login/", sign_in),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
